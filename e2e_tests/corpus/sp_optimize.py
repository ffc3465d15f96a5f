# packages: scipy numpy
import numpy as np
from scipy import optimize
res = optimize.minimize(lambda v: (v[0] - 1) ** 2 + (v[1] + 2) ** 2, x0=[0, 0])
print(res.success, np.round(res.x, 4))
print(round(optimize.brentq(lambda x: x ** 3 - 2, 0, 2), 6))
popt, _ = optimize.curve_fit(lambda x, a, b: a * x + b, np.arange(5), 2 * np.arange(5) + 1)
print(np.round(popt, 6))
