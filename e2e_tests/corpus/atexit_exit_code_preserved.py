# An uncaught exception gives 1 even though atexit handlers run fine after it.
import atexit
atexit.register(print, "handler ran")
raise RuntimeError("main failed")
