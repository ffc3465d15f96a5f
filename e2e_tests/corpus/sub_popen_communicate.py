import subprocess, sys
p = subprocess.Popen([sys.executable, "-c", "import sys; data = sys.stdin.read(); print(data.upper())"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
out, _ = p.communicate("piped input")
print(p.returncode, out.strip())
