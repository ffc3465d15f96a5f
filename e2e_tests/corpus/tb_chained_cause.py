def load(d):
    try:
        return d["key"]
    except KeyError as e:
        raise RuntimeError("configuration incomplete") from e
load({})
