# ResourceWarning is ignored by default: an unclosed file says nothing.
f = open("data.txt", "w")
f.write("x")
del f
import gc; gc.collect()
print("quiet")
