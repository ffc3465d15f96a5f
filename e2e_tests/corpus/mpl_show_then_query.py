# packages: matplotlib
# plt.show() under Agg changes nothing the script can see afterwards.
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [10, 20, 15])
plt.show()
print(plt.get_fignums(), fig.stale)
print([t.get_text() for t in ax.get_yticklabels()][:3])
print(ax.get_ylim())
