import logging, warnings
logging.basicConfig(format="%(name)s|%(levelname)s|%(message)s")
logging.captureWarnings(True)
warnings.warn("captured into logging")
