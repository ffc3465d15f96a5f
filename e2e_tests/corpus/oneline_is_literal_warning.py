print(1 is 1)
