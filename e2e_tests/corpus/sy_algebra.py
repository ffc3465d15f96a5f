# packages: sympy
import sympy as sp
x, y = sp.symbols("x y")
expr = (x + y) ** 3
print(sp.expand(expr))
print(sp.factor(x ** 2 - 1), sp.simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2))
print(sp.solve(x ** 2 - 4, x), sp.diff(sp.sin(x) * x, x), sp.integrate(x ** 2, (x, 0, 3)))
print(sp.Matrix([[1, 2], [3, 4]]).det(), sp.latex(sp.sqrt(x) / 2))
