import atexit, sys
atexit.register(sys.exit, 5)
atexit.register(print, "first handler")
print("body")
