# python3 flushes sys.stderr and sys.stdout right after the script's code, before it prints
# the traceback.
import sys


class W:
    def write(self, s):
        return len(s)

    def flush(self):
        sys.__stderr__.write("W.flush\n")


sys.stdout = W()
raise ValueError("boom")
