import os
print("status", os.system("echo via os.system"))
print(os.popen("echo via popen").read().strip())
print(os.WEXITSTATUS(os.system("exit 3")))
