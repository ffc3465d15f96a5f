# packages: numpy
# numpy works in threads and subprocesses of the script.
import numpy as np, threading, subprocess, sys
out = []
t = threading.Thread(target=lambda: out.append(float(np.dot(np.ones(100), np.ones(100)))))
t.start(); t.join()
print(out)
print(subprocess.check_output([sys.executable, "-c", "import numpy; print(numpy.arange(3).sum())"], text=True).strip())
