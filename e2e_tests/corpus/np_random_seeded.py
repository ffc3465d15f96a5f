# packages: numpy
import numpy as np
rng = np.random.default_rng(42)
print(rng.integers(0, 100, 5), rng.normal(size=3).round(6))
np.random.seed(0)
print(np.random.rand(3).round(6), np.random.randint(0, 10, 4))
print(np.random.RandomState(7).permutation(6))
