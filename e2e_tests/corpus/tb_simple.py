def f(x):
    return 1 / x
print("start")
f(0)
