import sys
print("exiting 3")
sys.exit(3)
