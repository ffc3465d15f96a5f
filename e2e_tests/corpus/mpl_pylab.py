# packages: matplotlib
from pylab import *
x = linspace(0, 1, 3)
plot(x, x ** 2)
print(x, gcf().number, type(gca()).__name__)
