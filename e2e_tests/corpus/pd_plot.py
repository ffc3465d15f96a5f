# packages: pandas matplotlib
# pandas' .plot draws with matplotlib; with the packages declared it must work as in python3.
import pandas as pd
s = pd.Series([1, 3, 2, 4], name="values")
ax = s.plot(title="series")
print(type(ax).__name__, ax.get_title(), len(ax.lines))
df = pd.DataFrame({"a": [1, 2, 3], "b": [3, 2, 1]})
ax2 = df.plot.bar()
print(len(ax2.patches))
ax3 = df.plot(kind="scatter", x="a", y="b")
print(ax3.get_xlabel(), ax3.get_ylabel())
