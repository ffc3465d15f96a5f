import faulthandler, sys
def inner():
    faulthandler.dump_traceback(all_threads=False)
def outer():
    inner()
outer()
print(faulthandler.is_enabled())
