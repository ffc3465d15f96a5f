"""The module docstring of the script."""
import sys
print(__doc__)
print(sys.modules["__main__"].__doc__)
