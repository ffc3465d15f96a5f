# packages: pandas
import pandas as pd
df = pd.DataFrame({"city": ["Paris", "Lyon", "Paris", "Nice"], "temp": [21.5, 19.0, 23.1, 25.4], "n": [1, 2, 3, 4]})
print(df)
print(df.describe())
print(df.groupby("city")["temp"].agg(["mean", "count"]))
print(df.sort_values("temp", ascending=False).head(2))
print(df.dtypes)
df.info()
