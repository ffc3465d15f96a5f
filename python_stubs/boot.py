# Zygote boot stub: runs once in the embedded interpreter, in the zygote's __main__, before the
# zygote starts forking. Configuration arrives in MPES_* environment variables (removed here);
# warnings go to the file descriptor MPES_REPORT_FD as text lines for the server.
import os
import sys


def _mpes_boot():
    env = os.environ
    cfg = {k: env.pop(k, "") for k in ("MPES_EXECUTABLE", "MPES_PRELOAD", "MPES_RUN_PATH",
                                       "MPES_REPORT_FD", "MPES_SYS_PATH", "MPES_PREFIX",
                                       "MPES_WORK_DIR")}
    # The zygote never writes bytecode into the interpreter's (read-only) tree; runs may.
    sys.dont_write_bytecode = True
    if cfg["MPES_EXECUTABLE"]:
        # An embedded interpreter would name the zygote binary; scripts expect the interpreter.
        sys.executable = cfg["MPES_EXECUTABLE"]
        sys._base_executable = cfg["MPES_EXECUTABLE"]
    if cfg["MPES_SYS_PATH"]:
        # Exactly the path the interpreter has when run normally (venv site-packages, .pth
        # entries), as probed by the server.
        sys.path[:] = [p for p in cfg["MPES_SYS_PATH"].split("\n") if p]
    if cfg["MPES_PREFIX"]:
        sys.prefix = sys.exec_prefix = cfg["MPES_PREFIX"]
    global _MPES_RUN_PATH, _MPES_WORK_DIR
    _MPES_RUN_PATH = cfg["MPES_RUN_PATH"] or "/usr/local/bin:/usr/bin:/bin"
    _MPES_WORK_DIR = cfg["MPES_WORK_DIR"]  # the runs' work dir when it is the same for all

    warnings = []
    for name in filter(None, cfg["MPES_PRELOAD"].split(",")):
        try:
            __import__(name)
        except BaseException as e:  # a broken module must not stop the zygote
            warnings.append(f"preload {name} skipped: {type(e).__name__}: {e}")
            continue
        try:
            threads = len(os.listdir("/proc/self/task"))
        except OSError:
            threads = 1
        if threads > 1:
            warnings.append(f"preload {name} started {threads - 1} thread(s): the zygote cannot "
                            "fork safely and will refuse runs")

    # The standard streams of runs, made once here (on fds 0/1/2, which each run replaces with
    # /dev/null and its pipes) rather than in every run: as a non-interactive `python script.py`
    # has them.
    import io
    global _MPES_STREAMS, _MPES_KEEP
    # The zygote's own streams and environment stay referenced here, so that a run replacing
    # them frees nothing (freeing touches, and so copies, pages shared with the zygote).
    _MPES_KEEP = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__,
                  sys.__stderr__, os.environ._data)
    _MPES_STREAMS = (
        io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                         encoding="utf-8", errors="strict"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                         encoding="utf-8", errors="strict"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                         encoding="utf-8", errors="backslashreplace", line_buffering=True),
    )

    # Everything the runner needs, imported once here rather than in every run.
    import atexit, builtins, importlib.util, io, linecache, tokenize, traceback, types  # noqa: F401,E401

    os.register_at_fork(after_in_child=_mpes_reseed_after_fork)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if cfg["MPES_REPORT_FD"]:
        fd = int(cfg["MPES_REPORT_FD"])
        os.write(fd, "\n".join(warnings).encode("utf-8", "replace"))
        os.close(fd)


_mpes_zygote = True


def _mpes_reseed_after_fork():
    # CPython reseeds `random` itself; numpy's legacy global generator must be reseeded too, or
    # every run would draw the same numbers. Only for the fork out of the zygote (a run's own
    # forks keep numpy's usual behaviour).
    if not _mpes_zygote:
        return
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        try:
            np_random.seed()
        except Exception:
            pass


_mpes_boot()
