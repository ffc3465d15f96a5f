class Noisy:
    def __del__(self):
        raise KeyError("in finalizer at exit")
n = Noisy()
print("done")
