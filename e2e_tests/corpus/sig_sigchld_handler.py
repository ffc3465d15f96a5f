import os, signal, subprocess, sys, time
seen = []
signal.signal(signal.SIGCHLD, lambda s, f: seen.append(s))
subprocess.run([sys.executable, "-c", "pass"])
time.sleep(0.05)
print(bool(seen))
