# The interpreter waits for non-daemon threads before exiting.
import threading, time
def late():
    time.sleep(0.2)
    print("non-daemon thread finished")
threading.Thread(target=late).start()
print("main body done")
