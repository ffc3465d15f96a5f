import inspect
def documented(a, b=2):
    """Adds."""
    return a + b
print(inspect.getsource(documented), end="")
print(inspect.signature(documented), inspect.getdoc(documented))
print(inspect.getsourcelines(documented)[1])
frame = inspect.currentframe()
print(frame.f_code.co_name, frame.f_lineno)
print(inspect.getmodulename(__file__))
print([f.function for f in inspect.stack()])
