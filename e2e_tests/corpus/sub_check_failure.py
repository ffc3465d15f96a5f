import subprocess, sys
subprocess.run([sys.executable, "-c", "import sys; sys.exit(4)"], check=True)
