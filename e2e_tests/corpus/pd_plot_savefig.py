# packages: pandas matplotlib numpy
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) ** 2})
df.plot(x="x", y="y", kind="line")
df.hist(bins=5)
plt.savefig("hist.png")
import os
print(os.path.getsize("hist.png") > 1000, plt.get_fignums())
