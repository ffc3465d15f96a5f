import sys
print("lone surrogate on stderr: \udcff", file=sys.stderr)
print("ok")
