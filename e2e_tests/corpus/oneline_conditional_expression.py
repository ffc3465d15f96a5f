print("a" "b", 10 ** 3) if 1 < 2 else print("never")  # a comment
