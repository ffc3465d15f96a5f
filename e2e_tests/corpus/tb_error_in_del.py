# An exception in __del__ is reported as ignored; the script goes on.
class Holder:
    def __del__(self):
        raise RuntimeError("in __del__")
h = Holder()
del h
print("after del")
