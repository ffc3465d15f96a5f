import subprocess
subprocess.run(["definitely-not-a-command-xyz"])
