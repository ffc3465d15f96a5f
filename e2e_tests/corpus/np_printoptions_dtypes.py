# packages: numpy
import numpy as np
np.set_printoptions(precision=3, suppress=True, linewidth=60)
print(np.array([1e-10, 1.23456789, 1e6]))
print(np.arange(100))
print(np.array(["a", "bb"]), np.array([True, False]), np.array([1 + 2j]))
print(np.dtype("datetime64[D]"), np.datetime64("2024-02-29") + np.timedelta64(1, "D"))
print(np.iinfo(np.int32), np.finfo(np.float32).eps)
