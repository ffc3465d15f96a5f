import warnings
def api(x):
    warnings.warn(f"api({x}) is slow", stacklevel=2)
def caller():
    api(1)
caller()
api(2)
