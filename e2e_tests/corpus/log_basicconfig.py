import logging, sys
logging.basicConfig(level=logging.DEBUG, format="%(levelname)s:%(name)s:%(filename)s:%(lineno)d:%(funcName)s:%(message)s")
logging.debug("configured")
def work():
    logging.getLogger("worker").info("in function")
work()
logging.warning("to stderr")
