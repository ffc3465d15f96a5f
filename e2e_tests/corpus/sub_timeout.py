import subprocess, sys
try:
    subprocess.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.2)
except subprocess.TimeoutExpired as e:
    print("timeout after", round(e.timeout, 1), e.cmd[1:])
