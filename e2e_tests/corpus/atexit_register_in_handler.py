import atexit
def outer():
    print("outer")
    atexit.register(lambda: print("registered during exit"))
atexit.register(outer)
