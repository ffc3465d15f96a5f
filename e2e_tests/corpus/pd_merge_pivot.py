# packages: pandas
import pandas as pd
left = pd.DataFrame({"k": ["a", "b", "c"], "x": [1, 2, 3]})
right = pd.DataFrame({"k": ["a", "b", "d"], "y": [4, 5, 6]})
print(left.merge(right, on="k", how="outer"))
sales = pd.DataFrame({"region": ["N", "S", "N", "S"], "q": ["Q1", "Q1", "Q2", "Q2"], "v": [10, 20, 30, 40]})
print(sales.pivot_table(index="region", columns="q", values="v", aggfunc="sum"))
print(pd.concat([left, left]).reset_index(drop=True))
print(sales.melt(id_vars=["region"], value_vars=["v"]).head(2))
