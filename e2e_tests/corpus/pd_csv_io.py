# packages: pandas
import io, os
import pandas as pd
csv = io.StringIO("name,score\nann,3\nbob,5\n")
df = pd.read_csv(csv)
df.to_csv("out.csv", index=False)
print(open("out.csv").read(), end="")
print(pd.read_csv("out.csv").score.sum())
df.to_json("out.json", orient="records")
print(open("out.json").read())
print(df.to_string(index=False))
print(df.to_markdown() if False else df.to_html().count("<tr>"))
