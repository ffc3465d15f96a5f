# atexit handlers run after sys.exit, and the status is sys.exit's.
import atexit, sys
atexit.register(lambda: print("cleanup"))
sys.exit(9)
