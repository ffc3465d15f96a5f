import pickle, pickletools, io
obj = {"list": [1, 2.0, "three", b"four", None, True], "tuple": (1,), "set": {1}, "nested": {"a": [{}]}}
for proto in range(pickle.HIGHEST_PROTOCOL + 1):
    blob = pickle.dumps(obj, protocol=proto)
    assert pickle.loads(blob) == obj
    print(proto, len(blob))
out = io.StringIO()
pickletools.dis(pickle.dumps([1, "a"], protocol=2), out)
print(out.getvalue().splitlines()[0])
