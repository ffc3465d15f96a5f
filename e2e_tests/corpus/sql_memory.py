import sqlite3
con = sqlite3.connect(":memory:")
con.execute("create table t (id integer primary key, name text unique, score real)")
con.executemany("insert into t (name, score) values (?, ?)", [("a", 1.5), ("b", 2.5), ("c", None)])
print(con.execute("select count(*), sum(score), avg(score) from t").fetchone())
con.row_factory = sqlite3.Row
row = con.execute("select * from t where name = 'b'").fetchone()
print(dict(row))
print(sqlite3.sqlite_version_info >= (3, 0, 0), sqlite3.paramstyle)
con.execute("insert into t (name) values ('a')")
