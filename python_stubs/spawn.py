# Spawn-path bootstrap: for an interpreter without a shared libpython, each run's process execs
# the interpreter with the runner stub followed by this code as `-c`, after the sandbox is in
# place and the run's fds are set (fd 3 = the script). It sets up what the zygote's boot would
# have, then runs the script as the zygote path does (the steps called from here, not from C).
import os
import sys

_MPES_RUN_PATH = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
_MPES_WORK_DIR = os.getcwd()
_mpes_zygote = False
_MPES_KEEP = (sys.stdin, sys.stdout, sys.stderr, os.environ._data)
_MPES_STREAMS = _mpes_standard_streams()
sys.stdin, sys.stdout, sys.stderr = _MPES_STREAMS
sys.__stdin__, sys.__stdout__, sys.__stderr__ = _MPES_STREAMS
if hasattr(sys, "orig_argv"):
    sys.orig_argv = [sys.executable, "script.py"]
