import warnings
warnings.simplefilter("error", UserWarning)
try:
    warnings.warn("turned into an error")
except UserWarning as e:
    print("caught:", e)
warnings.warn("uncaught one")
