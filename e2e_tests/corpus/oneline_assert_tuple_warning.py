assert (1, "a tuple is always true")
