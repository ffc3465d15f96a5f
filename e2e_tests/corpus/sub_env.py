import os, subprocess, sys
env = dict(os.environ, EXTRA="value")
print(subprocess.check_output([sys.executable, "-c", "import os; print(sorted(os.environ))"], env=env, text=True).strip())
print(subprocess.check_output(["sh", "-c", "echo $EXTRA-$HOME"], env=env, text=True).strip() == "value-" + os.environ["HOME"])
