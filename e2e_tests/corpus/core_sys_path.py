# sys.path starts with the script's directory, then the interpreter's own path.
import sys, os
print(sys.path[0])
print(all(os.path.isabs(p) for p in sys.path))
print([p for p in sys.path if "dist-packages" in p or "site-packages" in p][:1] != [])
print(sys.executable, sys.prefix, sys.exec_prefix, sys.base_prefix)
