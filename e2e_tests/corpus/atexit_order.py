import atexit
for i in range(3):
    atexit.register(print, "handler", i)
def named(x, y=0):
    print("named", x, y)
atexit.register(named, 1, y=2)
print("body")
