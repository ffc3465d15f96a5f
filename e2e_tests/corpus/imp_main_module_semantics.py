import sys, importlib.util
import __main__
x = 41
__main__.x += 1
print(x, __main__ is sys.modules["__main__"])
print(importlib.util.find_spec("__main__"))
print(__main__.__dict__ is globals())
def f(): pass
print(f.__module__, f.__qualname__, type(f).__module__)
class C: pass
print(C.__module__, repr(C))
