# packages: pandas
# pandas' SettingWithCopyWarning points at the script's line.
import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})
sub = df[df.a > 1]
sub["b"] = 0
print(sub)
