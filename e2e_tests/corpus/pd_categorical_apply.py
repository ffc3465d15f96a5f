# packages: pandas
import pandas as pd
df = pd.DataFrame({"grade": pd.Categorical(["b", "a", "c", "a"], categories=["a", "b", "c"], ordered=True)})
print(df.grade.value_counts().sort_index())
print(df.grade.min(), df.grade.cat.codes.tolist())
print(df.assign(up=df.grade.astype(str).str.upper()).apply(lambda r: r.up * 2, axis=1).tolist())
