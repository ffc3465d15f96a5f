# SystemExit in a thread ends only the thread, silently.
import sys, threading
def worker():
    sys.exit(7)
t = threading.Thread(target=worker)
t.start(); t.join()
print("main continues")
