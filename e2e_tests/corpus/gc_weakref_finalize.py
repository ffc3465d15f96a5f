import weakref, gc
class Thing:
    pass
t = Thing()
weakref.finalize(t, print, "finalizer ran")
alive = Thing()
weakref.finalize(alive, print, "finalizer of a live object ran at exit")
del t
gc.collect()
print("after collect")
