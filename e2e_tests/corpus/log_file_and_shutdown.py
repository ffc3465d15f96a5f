# A FileHandler in the work dir, flushed by logging's own atexit shutdown.
import logging, atexit
logging.basicConfig(filename="app.log", level=logging.INFO, format="%(message)s")
logging.info("line one")
logging.info("line two")
atexit.register(lambda: print(open("app.log").read(), end=""))
