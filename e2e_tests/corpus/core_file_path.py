# __file__ is the script's path in the work dir, as `python3 script.py` gives it.
import os, sys
print(__file__, os.path.basename(__file__), os.path.isabs(__file__))
print(os.path.dirname(__file__) == os.getcwd() == sys.path[0])
print(open(__file__).read().splitlines()[0])
print(sorted(os.listdir(".")))
