# SIGINT raises KeyboardInterrupt; uncaught, the process dies of SIGINT after the traceback.
import os, signal, time
os.kill(os.getpid(), signal.SIGINT)
time.sleep(1)
