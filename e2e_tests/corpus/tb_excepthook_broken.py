# A sys.excepthook that fails itself.
import sys
def hook(kind, value, tb):
    raise RuntimeError("the hook failed")
sys.excepthook = hook
raise ValueError("original")
