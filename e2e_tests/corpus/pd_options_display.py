# packages: pandas numpy
import numpy as np
import pandas as pd
pd.set_option("display.max_rows", 6)
pd.set_option("display.precision", 3)
df = pd.DataFrame(np.arange(40).reshape(20, 2) / 7, columns=["x", "y"])
print(df)
print(pd.get_option("display.width"), pd.options.display.max_columns)
