# packages: sympy
import sympy as sp
x = sp.symbols("x")
print(sp.series(sp.exp(x), x, 0, 5))
print(sp.N(sp.pi, 30), sp.nsimplify(0.125))
print(sp.limit(sp.sin(x) / x, x, 0), sp.summation(1 / sp.Symbol("n") ** 2, (sp.Symbol("n"), 1, sp.oo)))
f = sp.lambdify(x, x ** 2 + 1)
print(f(3))
