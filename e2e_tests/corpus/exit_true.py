# bool is an int: True exits 1, silently.
import sys
sys.exit(True)
