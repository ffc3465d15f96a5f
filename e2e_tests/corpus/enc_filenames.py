import os
os.mkdir("dïr")
open(os.path.join("dïr", "fïle ✓.txt"), "w").close()
open(b"raw\xff.txt", "wb").close()
print(sorted(os.listdir(".")) == sorted(os.listdir(".")))
print(sorted(os.listdir("dïr")))
print(sorted(n for n in os.listdir(".") if n.startswith("raw")), os.fsencode("raw\udcff.txt"))
