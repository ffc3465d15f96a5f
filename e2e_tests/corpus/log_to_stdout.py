import logging, sys
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
log = logging.getLogger("out")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.info("info to stdout")
log.warning("warning to stdout")
