import os
print("buffered and lost")
os._exit(42)
