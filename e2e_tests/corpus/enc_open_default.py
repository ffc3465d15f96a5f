# open() without an encoding uses the locale's: UTF-8 here.
with open("t.txt", "w") as f:
    print(f.encoding, f.errors)
    f.write("héllo ✓\n")
print(open("t.txt", "rb").read())
print(open("t.txt").read(), end="")
