import subprocess, sys
r = subprocess.run([sys.executable, "-c", "print('hi from child')"], capture_output=True, text=True)
print(r.returncode, repr(r.stdout), repr(r.stderr))
r = subprocess.run(["echo", "shell", "tools"], capture_output=True)
print(r.stdout)
