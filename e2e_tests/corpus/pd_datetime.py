# packages: pandas
import pandas as pd
idx = pd.date_range("2024-01-01", periods=6, freq="D")
s = pd.Series(range(6), index=idx)
print(s.resample("2D").sum())
print(pd.to_datetime(["2024-03-01 12:00", "2024-03-02"]).strftime("%Y-%m-%d"))
print(pd.Timestamp("2024-02-29").day_name(), pd.Timedelta("1h30m"))
print(s.rolling(3).mean().round(2).tolist())
