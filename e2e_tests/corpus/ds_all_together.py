# packages: numpy pandas scipy scikit-learn matplotlib
# The seed's data-science scenario: every package at once.
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LinearRegression
import matplotlib.pyplot as plt
rng = np.random.default_rng(3)
df = pd.DataFrame({"x": np.arange(20.0)})
df["y"] = 2 * df.x + rng.normal(0, 1, 20)
model = LinearRegression().fit(df[["x"]], df.y)
print(round(model.coef_[0], 4), round(stats.pearsonr(df.x, df.y)[0], 4))
ax = df.plot.scatter(x="x", y="y")
ax.plot(df.x, model.predict(df[["x"]]), color="red")
plt.title("fit")
plt.savefig("fit.png")
print(df.describe().loc[["mean", "std"]].round(3))
