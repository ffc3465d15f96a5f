# python3 deletes __file__ and __cached__ from __main__ once the script ends normally, before
# atexit and the finalizers run.
import atexit


class D:
    def __del__(self):
        try:
            print("del sees", __file__.rsplit("/", 1)[-1])
        except NameError as e:
            print("del:", e)


def show():
    g = globals()
    print("atexit sees __file__:", "__file__" in g, "__cached__" in g)


atexit.register(show)
print("body sees __file__:", "__file__" in globals())
d = D()
