# packages: matplotlib
import matplotlib.pyplot as plt
import matplotlib.style as mstyle
print(sorted(plt.style.available)[:5], "ggplot" in plt.style.available)
plt.style.use("ggplot")
print(plt.rcParams["axes.facecolor"])
with plt.style.context("dark_background"):
    print(plt.rcParams["figure.facecolor"])
print(plt.rcParams["figure.facecolor"])
print(mstyle is plt.style)
