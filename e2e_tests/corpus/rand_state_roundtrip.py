import random
state = random.getstate()
a = [random.random() for _ in range(3)]
random.setstate(state)
print(a == [random.random() for _ in range(3)])
print(len(random.randbytes(8)), random.getrandbits(0))
