# packages: numpy
# numpy's floating point warnings name the script's line, as in python3.
import numpy as np
a = np.array([1.0, 0.0, -1.0])
print(a / 0)
print(np.log(a))
with np.errstate(divide="ignore", invalid="ignore"):
    print(np.sqrt(a), a / 0)
np.seterr(all="raise")
np.array([1.0]) / 0
