import zipfile, sys
with zipfile.ZipFile("lib.zip", "w") as z:
    z.writestr("zipped.py", "def hi():\n    return 'from zip'\n")
sys.path.insert(0, "lib.zip")
import zipped
print(zipped.hi(), zipped.__file__.endswith("lib.zip/zipped.py"))
