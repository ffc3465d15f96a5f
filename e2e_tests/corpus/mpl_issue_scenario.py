# packages: matplotlib numpy
# The scenario that failed with the packages declared: a fresh figure after matplotlib.use.
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import numpy as np
fig, ax = plt.subplots()
x = np.linspace(0, 2 * np.pi, 50)
ax.plot(x, np.sin(x), label="sin")
ax.legend()
ax.set_title("chart")
fig.savefig("chart.png")
print("saved", matplotlib.get_backend())
