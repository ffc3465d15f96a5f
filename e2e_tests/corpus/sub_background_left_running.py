# A child left running when the script ends writes nothing more.
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30); print('late')"])
print("script done")
