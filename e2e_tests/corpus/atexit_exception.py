import atexit
def failing():
    raise ValueError("atexit failure")
atexit.register(lambda: print("runs after the failure"))
atexit.register(failing)
print("body")
