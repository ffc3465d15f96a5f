import os, signal
try:
    signal.raise_signal(signal.SIGINT)
except KeyboardInterrupt:
    print("caught KeyboardInterrupt")
