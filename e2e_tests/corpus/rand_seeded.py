import random
random.seed(12345)
print([random.randint(0, 100) for _ in range(5)], random.random())
rng = random.Random("seed-string")
print(rng.choice("abcdef"), rng.sample(range(50), 4), rng.gauss(0, 1))
items = list(range(10)); random.shuffle(items); print(items)
