# packages: pandas
import pandas as pd
df = pd.DataFrame({"a": [1]})
df["missing"]
