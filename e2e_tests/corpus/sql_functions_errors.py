import sqlite3
con = sqlite3.connect(":memory:")
con.create_function("rev", 1, lambda s: s[::-1])
print(con.execute("select rev('hello')").fetchone())
try:
    con.execute("select * from missing")
except sqlite3.OperationalError as e:
    print("OperationalError:", e)
con.execute("selec 1")
