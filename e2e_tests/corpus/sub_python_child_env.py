# A python3 child sees the same interpreter and a comparable environment.
import subprocess, sys
code = "import sys, os; print(sys.executable == %r, sys.flags.isolated, os.getcwd() == %r)" % (sys.executable, __import__("os").getcwd())
print(subprocess.check_output([sys.executable, "-c", code], text=True).strip())
