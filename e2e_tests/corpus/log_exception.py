import logging
logging.basicConfig(format="%(levelname)s %(message)s")
try:
    {}["k"]
except KeyError:
    logging.exception("lookup failed")
print("continues")
