# SIGTERM with the default disposition kills the process: exit -15.
import os, signal, sys
print("about to die", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
print("not reached")
