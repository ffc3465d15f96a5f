# packages: numpy
import numpy as np
a = np.arange(12).reshape(3, 4)
print(a)
print(a.T @ a, a.sum(axis=0), a.mean(), a.dtype, a.shape)
print(np.linspace(0, 1, 5), np.eye(2, dtype=int))
print(repr(np.array([1.5, np.nan, np.inf])), np.__version__ == np.version.version)
