import threading
threading.Timer(0.05, lambda: print("timer fired")).start()
print("timer started")
