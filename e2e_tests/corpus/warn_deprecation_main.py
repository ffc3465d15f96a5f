# DeprecationWarning is shown when triggered in __main__, hidden elsewhere.
import warnings
warnings.warn("old API", DeprecationWarning)
def helper():
    warnings.warn("old helper", DeprecationWarning, stacklevel=2)
helper()
with open("lib_mod.py", "w") as f:
    f.write("import warnings\ndef f():\n    warnings.warn('lib deprecation', DeprecationWarning)\n")
import lib_mod
lib_mod.f()
print("done")
