# packages: matplotlib
import matplotlib.pyplot as plt
print(plt.get_fignums())
fig = plt.figure(figsize=(4, 3), dpi=50)
ax = fig.add_subplot(111)
ax.plot([1, 2, 3], [3, 1, 2], "o-")
ax.set_xlim(0, 4)
print(plt.get_fignums(), fig.get_size_inches(), ax.get_xlim())
print([t.get_text() for t in ax.get_xticklabels()])
plt.close(fig)
print(plt.get_fignums())
