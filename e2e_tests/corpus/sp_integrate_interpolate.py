# packages: scipy numpy
import numpy as np
from scipy import integrate, interpolate, special
print(np.round(integrate.quad(np.sin, 0, np.pi), 8))
sol = integrate.solve_ivp(lambda t, y: -y, (0, 1), [1.0], rtol=1e-8)
print(round(float(sol.y[0, -1]), 5))
f = interpolate.interp1d([0, 1, 2], [0, 10, 0])
print(f(0.5), f(1.5))
print(round(special.gamma(5), 6), round(special.erf(0.5), 6))
