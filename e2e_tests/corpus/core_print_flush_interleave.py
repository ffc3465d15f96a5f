# A child process writes straight to the shared stdout between our flushed prints.
import subprocess, sys
print("parent before", flush=True)
subprocess.run([sys.executable, "-c", "print('child')"])
print("parent after")
