try:
    [][1]
except IndexError:
    raise TypeError("replaced") from None
