# packages: matplotlib
from mpl_toolkits.mplot3d import Axes3D  # noqa: F401
import matplotlib.pyplot as plt
fig = plt.figure()
ax = fig.add_subplot(projection="3d")
ax.plot([0, 1], [0, 1], [0, 1])
print(type(ax).__name__, ax.name)
from mpl_toolkits.axes_grid1 import make_axes_locatable
print(make_axes_locatable(plt.figure().gca()).__class__.__name__)
