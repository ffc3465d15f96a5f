import importlib.metadata as md, importlib.util, sys
print(importlib.util.find_spec("json") is not None, importlib.util.find_spec("nope_xyz"))
print(md.version("pip") if any(d.metadata["Name"] == "pip" for d in md.distributions()) else "no pip")
print("sqlite3" in sys.stdlib_module_names, "sys" in sys.builtin_module_names)
