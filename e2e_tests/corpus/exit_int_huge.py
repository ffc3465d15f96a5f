# A code that does not fit a C long: CPython exits -1 (255).
import sys
sys.exit(2 ** 70)
