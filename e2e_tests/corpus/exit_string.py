# A string is printed to stderr and the status is 1.
import sys
print("before")
sys.exit("fatal: something went wrong")
