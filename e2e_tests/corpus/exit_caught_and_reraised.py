import sys
try:
    sys.exit(3)
except SystemExit as e:
    print("caught", e.code, repr(e), e.args)
    raise SystemExit(e.code + 1)
