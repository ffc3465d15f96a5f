# The script runs as __main__ with the globals python3 gives it.
import sys
print(__name__, __package__, __spec__, __doc__, __cached__)
print(sorted(k for k in globals()))
print(type(__loader__).__name__, __loader__.name)
print(sys.modules["__main__"] is sys.modules[__name__])
print(__builtins__)
print(sys.argv, sys.orig_argv[1:])
