# packages: matplotlib
import matplotlib.pyplot as plt
from matplotlib import font_manager
fig, ax = plt.subplots()
t = ax.text(0.5, 0.5, r"$\alpha^2 + \sqrt{\beta}$", fontsize=14)
fig.canvas.draw()
bbox = t.get_window_extent()
print(bbox.width > 0, bbox.height > 0)
print(font_manager.findfont("DejaVu Sans").endswith(".ttf"))
print(plt.rcParams["mathtext.fontset"])
