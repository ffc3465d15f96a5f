# The last expression's value is freed when its statement ends, as python3 frees it: its
# __del__ runs then (before a thread still running ends), and an exception there is reported
# as unraisable.
import threading
import time


class Loud:
    def __del__(self):
        print("value freed")


class Bad:
    def __del__(self):
        raise ValueError("in __del__")


def worker():
    time.sleep(0.2)
    print("thread done")


threading.Thread(target=worker).start()
Bad()
Loud()
