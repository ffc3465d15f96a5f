# packages: matplotlib
import matplotlib.pyplot as plt
from matplotlib import animation, patches, ticker
fig, ax = plt.subplots()
ax.add_patch(patches.Circle((0.5, 0.5), 0.2))
ax.xaxis.set_major_formatter(ticker.PercentFormatter())
line, = ax.plot([], [])
anim = animation.FuncAnimation(fig, lambda i: (line.set_data([0, i], [0, i]), (line,))[1], frames=3, blit=False)
print(type(anim).__name__, len(ax.patches), ax.xaxis.get_major_formatter().__class__.__name__)
plt.close("all")
