# An exception in a thread is printed by threading.excepthook; the script goes on.
import threading
def crash():
    raise ValueError("thread failure")
t = threading.Thread(target=crash, name="worker-1")
t.start(); t.join()
print("main still running")
