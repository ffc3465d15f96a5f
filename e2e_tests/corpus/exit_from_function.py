import sys
def deep(n):
    if n == 0:
        sys.exit(12)
    deep(n - 1)
deep(20)
