d = {"a": 1}
d[("tuple", "key")]
