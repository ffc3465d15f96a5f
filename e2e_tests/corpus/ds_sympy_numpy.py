# packages: sympy numpy
import numpy as np
import sympy as sp
x = sp.symbols("x")
f = sp.lambdify(x, sp.sin(x) ** 2, "numpy")
print(np.round(f(np.array([0, np.pi / 2])), 6))
