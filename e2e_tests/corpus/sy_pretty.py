# packages: sympy
# pretty printing picks unicode from the stream's encoding, as in python3.
import sympy as sp
x = sp.symbols("x")
sp.pprint(sp.Integral(sp.sqrt(1 / x), x))
sp.pprint(sp.Matrix([[1, x], [x ** 2, 3]]))
print(sp.pretty(sp.pi * x ** 2))
sp.init_printing()
print(sp.Rational(1, 3) + sp.Rational(1, 6))
