items = [3, 2, 1, 0]
inverse = list(map(lambda v: 10 // v, items))
