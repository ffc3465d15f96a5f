# packages: matplotlib
# A script declaring matplotlib but never importing it sees what python3 shows it.
import sys
print("matplotlib.colors" in sys.modules or True)
print(sum(range(10)))
