# packages: matplotlib numpy
import numpy as np
import matplotlib.pyplot as plt
fig, axes = plt.subplots(2, 2, figsize=(6, 6), sharex=True)
for i, ax in enumerate(axes.flat):
    ax.imshow(np.arange(16).reshape(4, 4) * i, cmap="gray")
    ax.set_title(f"panel {i}")
fig.suptitle("grid")
fig.savefig("grid.png", dpi=50)
from PIL import Image
print(Image.open("grid.png").size)
