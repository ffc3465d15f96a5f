import sqlite3, os
with sqlite3.connect("db.sqlite") as con:
    con.execute("create table kv (k text, v text)")
    con.execute("insert into kv values ('x', 'y')")
con.close()
print(os.path.getsize("db.sqlite") > 0)
con = sqlite3.connect("db.sqlite")
print(con.execute("select * from kv").fetchall())
print([r[1] for r in con.execute("pragma table_info(kv)")])
print(con.execute("select sqlite_version() = ?", (sqlite3.sqlite_version,)).fetchone())
