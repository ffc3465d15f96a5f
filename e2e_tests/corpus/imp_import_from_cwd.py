# A module the script writes into its work dir is importable, and cached as python3 caches it.
import importlib, os, sys
with open("mymod.py", "w") as f:
    f.write("VALUE = 1\nprint('mymod imported as', __name__)\n")
import mymod
print(mymod.VALUE, mymod.__file__ == os.path.join(os.getcwd(), "mymod.py"))
with open("mymod.py", "w") as f:
    f.write("VALUE = 2\nprint('mymod reloaded')\n")
os.utime("mymod.py", (0, 2 ** 31 - 10))
importlib.reload(mymod)
print(mymod.VALUE)
print(os.path.isdir("__pycache__"), sys.dont_write_bytecode)
