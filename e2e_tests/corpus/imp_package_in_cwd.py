import os, importlib
os.makedirs("pkg/sub", exist_ok=True)
open("pkg/__init__.py", "w").write("NAME = 'pkg'\n")
open("pkg/sub/__init__.py", "w").write("")
open("pkg/sub/mod.py", "w").write("from .. import NAME\nWHO = NAME + '.sub.mod'\n")
mod = importlib.import_module("pkg.sub.mod")
print(mod.WHO, mod.__package__, mod.__spec__.name)
import pkg.sub
print(pkg.sub.mod is mod)
