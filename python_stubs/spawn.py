# Spawn-path bootstrap: for an interpreter without a shared libpython, each run's process execs
# the interpreter with this code (followed by the runner stub) as `-c`, after the sandbox is in
# place and the run's fds are set (fd 3 = the script). It sets up what the zygote's boot would
# have, then runs the script exactly as the zygote path does.
import io
import os
import sys

_MPES_RUN_PATH = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
_MPES_WORK_DIR = os.getcwd()
_mpes_zygote = False
_MPES_STREAMS = (
    io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                     encoding="utf-8", errors="strict"),
    io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                     encoding="utf-8", errors="strict"),
    io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                     encoding="utf-8", errors="backslashreplace", line_buffering=True),
)
_MPES_KEEP = (sys.stdin, sys.stdout, sys.stderr, os.environ._data)
