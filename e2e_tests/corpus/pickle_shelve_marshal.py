import shelve, marshal, json
with shelve.open("store") as db:
    db["k"] = {"v": [1, 2]}
with shelve.open("store") as db:
    print(dict(db))
code = compile("x = 1 + 1", "<m>", "exec")
ns = {}; exec(marshal.loads(marshal.dumps(code)), ns); print(ns["x"])
print(json.dumps({"é": [1.5, None]}, ensure_ascii=False), json.loads('{"a": NaN}'))
