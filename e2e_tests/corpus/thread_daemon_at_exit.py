# Daemon threads are abandoned at exit.
import threading, time
def forever():
    while True:
        time.sleep(0.01)
threading.Thread(target=forever, daemon=True).start()
print("exiting with a daemon thread alive")
