def level(n):
    if n == 0:
        raise IndexError("bottom")
    return level(n - 1)
level(40)
