# A lone surrogate cannot be encoded to UTF-8 with errors=strict.
print("fine")
print("bad \udcff char")
