# /tmp exists and is writable, and starts empty for the script's own files.
import os
open("/tmp/mine.txt", "w").write("x")
print(os.path.exists("/tmp/mine.txt"), open("/tmp/mine.txt").read())
os.remove("/tmp/mine.txt")
