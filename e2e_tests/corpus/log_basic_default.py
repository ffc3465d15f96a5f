# Logging without configuration: warnings and above on stderr, bare messages.
import logging
logging.debug("debug hidden")
logging.info("info hidden")
logging.warning("careful: %d items", 3)
logging.error("failed")
log = logging.getLogger("app.module")
log.warning("from a named logger")
log.critical("critical!")
