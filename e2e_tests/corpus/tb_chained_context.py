try:
    int("x")
except ValueError:
    undefined_name
