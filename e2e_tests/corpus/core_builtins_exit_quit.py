# exit and quit are site's helpers, as in python3.
print(repr(exit), repr(quit), type(exit).__name__)
print(help.__class__.__name__, copyright.__class__.__name__, credits.__class__.__name__)
exit(4)
