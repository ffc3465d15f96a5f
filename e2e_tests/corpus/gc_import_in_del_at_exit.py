# A finalizer running at exit cannot import any more, as in python3.
import os
class Late:
    def __del__(self):
        for name in ("os", "xml.dom.minidom"):
            try:
                __import__(name)
                print("imported", name)
            except ImportError as e:
                print(type(e).__name__, e)
        print("sys.argv is", __import__.__name__ and type(os).__name__)
keep = Late()
def helper():
    return keep
print("end of script")
