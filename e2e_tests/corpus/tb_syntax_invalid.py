x = 1
if x = 2:
    pass
