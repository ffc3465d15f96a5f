# sys.exit inside an except block: no traceback, the exit code wins.
import sys
try:
    1 / 0
except ZeroDivisionError:
    print("handling", file=sys.stderr)
    sys.exit(2)
