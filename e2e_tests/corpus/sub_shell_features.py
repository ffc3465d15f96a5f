import subprocess
out = subprocess.check_output("printf '%s\\n' b a c | sort | tr a-z A-Z", shell=True, text=True)
print(out.split())
print(subprocess.call(["sh", "-c", "exit 7"]))
print(subprocess.getstatusoutput("echo status; exit 2"))
