# packages: pandas
import pandas as pd
s = pd.Series([1, 2, 3])
print(s.append(pd.Series([4])).tolist() if hasattr(s, "append") else "no append")
df = pd.DataFrame({"a": ["x", "y"], "b": [1, 2]})
print(df.mean(numeric_only=None) if pd.__version__.startswith("1.") else df.mean(numeric_only=True))
