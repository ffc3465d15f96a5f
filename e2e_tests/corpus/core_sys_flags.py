# Interpreter flags and settings a plain `python3 script.py` has.
import sys
print(sys.flags)
print(sys.dont_write_bytecode, sys.getrecursionlimit(), sys.getswitchinterval())
print(sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else None)
print(sys.warnoptions, sys._xoptions, sys.pycache_prefix)
print(sys.getdefaultencoding(), sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
