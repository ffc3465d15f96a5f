import runpy
open("other.py", "w").write("import sys\nprint('other as', __name__)\nRESULT = 6 * 7\n")
ns = runpy.run_path("other.py")
print(ns["RESULT"])
ns = runpy.run_path("other.py", run_name="__main__")
print(ns["__name__"])
