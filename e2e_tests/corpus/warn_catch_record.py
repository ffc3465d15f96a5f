import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warnings.warn("recorded", UserWarning)
    warnings.warn("recorded", UserWarning)
print(len(caught), caught[0].category.__name__, str(caught[0].message), caught[0].lineno)
print(caught[0].filename.endswith("script.py"))
warnings.warn("after the block")
