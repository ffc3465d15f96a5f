# packages: matplotlib
import matplotlib
print(matplotlib.get_backend(), matplotlib.rcParams["backend"])
import matplotlib.pyplot as plt
print(plt.get_backend(), matplotlib.is_interactive())
plt.switch_backend("pdf")
print(plt.get_backend())
fig = plt.figure()
fig.savefig("f.pdf")
plt.switch_backend("agg")
print(plt.get_backend())
import matplotlib.backends.backend_svg as svg
print(svg.FigureCanvasSVG.__name__)
