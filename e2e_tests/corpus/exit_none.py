import sys
print("bye")
sys.exit()
