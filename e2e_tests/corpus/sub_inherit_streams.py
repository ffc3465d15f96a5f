# Children write straight to the inherited stdout and stderr.
import subprocess, sys
sys.stdout.flush()
subprocess.run([sys.executable, "-c", "import sys; print('child stdout'); print('child stderr', file=sys.stderr)"])
subprocess.run("echo from sh; echo sh err >&2", shell=True)
print("parent end")
