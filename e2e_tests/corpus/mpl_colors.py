# packages: matplotlib
import matplotlib
import matplotlib.colors as mcolors
print(mcolors.to_hex("tab:blue"), mcolors.to_rgba("red", 0.5), mcolors.is_color_like("nope"))
print(matplotlib.colors is mcolors, hasattr(matplotlib, "colors"))
cmap = matplotlib.colormaps["viridis"]
print(cmap.name, cmap.N, [round(c, 4) for c in cmap(0.5)])
norm = mcolors.Normalize(vmin=0, vmax=10)
print(norm(5.0), mcolors.LinearSegmentedColormap.from_list("x", ["red", "blue"])(0.0))
print(len(mcolors.CSS4_COLORS), mcolors.TABLEAU_COLORS["tab:red"])
