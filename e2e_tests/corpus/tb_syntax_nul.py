# compile() refuses source with a null byte, the way python3 reports it.
import subprocess, sys
src = b"print('a')\x00\n"
open("nul.py", "wb").write(src)
r = subprocess.run([sys.executable, "nul.py"], capture_output=True, text=True)
print(r.returncode, r.stderr.replace("\n", "|"))
