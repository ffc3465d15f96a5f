# packages: matplotlib
# matplotlib's own warnings (through logging and warnings) reach stderr as in python3.
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2])
ax.legend()
fig.tight_layout()
plt.plot([1, 2], [1, 2], "r-", color="blue")
print("done")
