# A function of the script installed as a signal handler: python3 lets handlers go before it
# frees __main__, so the script's objects are still finalized at exit (a generator's finally,
# a __del__).
import signal


def on_term(signum, frame):
    pass


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, lambda s, f: None)


def gen():
    try:
        yield 1
    finally:
        print("generator cleaned up")


class Resource:
    def __del__(self):
        print("Resource finalized")


g = gen()
next(g)
r = Resource()
print("end of script")
