# packages: polars
# requires: polars
import polars as pl
df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "x"]})
print(df.group_by("b").agg(pl.col("a").sum()).sort("b"))
print(df.filter(pl.col("a") > 1))
