# atexit handlers run after non-daemon threads have finished.
import atexit, threading, time
atexit.register(lambda: print("atexit after threads"))
def slow():
    time.sleep(0.1)
    print("thread done")
threading.Thread(target=slow).start()
print("main done")
