import atexit
def a(): print("a")
def b(): print("b")
atexit.register(a); atexit.register(b); atexit.register(a)
atexit.unregister(a)
print(atexit._ncallbacks())
