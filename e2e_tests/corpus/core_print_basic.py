# The plainest script: print, several arguments, sep and end.
print("hello")
print(1, 2.5, None, True, [1, "a"], {"k": (1,)})
print("a", "b", sep="-", end="!\n")
print()
