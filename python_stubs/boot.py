# Zygote boot stub: runs once in the embedded interpreter, in the zygote's __main__, before the
# zygote starts forking. Configuration arrives in MPES_* environment variables (removed here);
# warnings go to the file descriptor MPES_REPORT_FD as text lines for the server.
#
# What the zygote imports (--preload, a declared distribution's modules) must leave the
# interpreter as the script would have it after importing them itself. So the imports run with
# the runs' environment, standard streams, a writable home and work dir; and a module whose
# import raises, starts a thread or writes anything is not kept half-imported: the zygote is
# started again without it (a "drop" line in the report), and scripts import it themselves.
import os
import sys


def _mpes_boot():
    env = os.environ
    cfg = {k: env.pop(k, "") for k in ("MPES_EXECUTABLE", "MPES_PRELOAD", "MPES_RUN_PATH",
                                       "MPES_REPORT_FD", "MPES_SYS_PATH", "MPES_PREFIX",
                                       "MPES_WORK_DIR", "MPES_PRELOAD_DIR", "MPES_BOOT_NOTES")}
    # The zygote never writes bytecode into the interpreter's (read-only) tree; runs may.
    sys.dont_write_bytecode = True
    if cfg["MPES_EXECUTABLE"]:
        # An embedded interpreter would name the zygote binary; scripts expect the interpreter.
        sys.executable = cfg["MPES_EXECUTABLE"]
        sys._base_executable = cfg["MPES_EXECUTABLE"]
        if hasattr(sys, "orig_argv"):
            sys.orig_argv = [cfg["MPES_EXECUTABLE"], "script.py"]
    if cfg["MPES_SYS_PATH"]:
        # Exactly the path the interpreter has when run normally (venv site-packages, .pth
        # entries), as probed by the server.
        sys.path[:] = [p for p in cfg["MPES_SYS_PATH"].split("\n") if p]
    if cfg["MPES_PREFIX"]:
        sys.prefix = sys.exec_prefix = cfg["MPES_PREFIX"]
    global _MPES_RUN_PATH, _MPES_WORK_DIR, _MPES_STREAMS, _MPES_KEEP, _MPES_PRELOAD_ENV
    _MPES_RUN_PATH = cfg["MPES_RUN_PATH"] or "/usr/local/bin:/usr/bin:/bin"
    _MPES_WORK_DIR = cfg["MPES_WORK_DIR"]  # the runs' work dir when it is the same for all

    # The standard streams of runs, made once here (on fds 0/1/2, which each run replaces with
    # /dev/null and its pipes) as a non-interactive `python3 script.py` has them, and in place
    # before any preload: a module that keeps sys.stderr at import keeps the runs' stream.
    # The zygote's own streams and environment stay referenced, so that replacing them frees
    # nothing (freeing touches, and so copies, pages shared with the zygote).
    _MPES_KEEP = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__,
                  sys.__stderr__, env._data)
    _MPES_STREAMS = _mpes_standard_streams()
    sys.stdin, sys.stdout, sys.stderr = _MPES_STREAMS
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = _MPES_STREAMS

    warnings = [line for line in cfg["MPES_BOOT_NOTES"].split("\n") if line]
    names = [n for n in cfg["MPES_PRELOAD"].split(",") if n]
    if names:
        # The runs' environment (the C environment also keeps the zygote's one-thread BLAS
        # settings, which keep it forkable) and a writable home as cwd.
        _MPES_PRELOAD_ENV = _mpes_run_environment(cfg["MPES_PRELOAD_DIR"] or _MPES_WORK_DIR or "/")
        env._data = dict(_MPES_PRELOAD_ENV)
        for key, value in _MPES_PRELOAD_ENV.items():
            os.putenv(key, value)  # for what a preload runs (matplotlib runs fc-list)
        warnings += _mpes_preload(names, cfg["MPES_PRELOAD_DIR"])

    # Everything the runner needs, imported once here rather than in every run.
    import atexit, builtins, gc, importlib.machinery, importlib.util, io, linecache, tokenize, traceback, types  # noqa: F401,E401

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


def _mpes_preload(names, home):
    # Imports each module; one that fails, starts a thread or writes output is reported as
    # "drop NAME" (the zygote starts again without it). Output goes to the zygote's log.
    import io
    warnings = []
    cwd = os.getcwd()
    if home:
        try:
            os.chdir(home)
        except OSError as e:
            warnings.append(f"preload: cannot enter {home}: {e}")
    saved = (os.dup(1), os.dup(2))
    capture = os.memfd_create("mpes-preload", os.MFD_CLOEXEC) if hasattr(os, "memfd_create") else None
    try:
        for name in names:
            why = None
            if capture is not None:
                os.ftruncate(capture, 0)
                os.lseek(capture, 0, os.SEEK_SET)
                os.dup2(capture, 1)
                os.dup2(capture, 2)
            try:
                __import__(name)
            except BaseException as e:  # a broken module must not stop the zygote
                why = f"{type(e).__name__}: {e}"
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            try:
                threads = len(os.listdir("/proc/self/task"))
            except OSError:
                threads = 1
            written = b""
            if capture is not None:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                written = os.pread(capture, 2000, 0)
                if written:
                    os.write(2, b"zygote: preload " + name.encode() + b" wrote:\n" + written + b"\n")
            if why is None and threads > 1:
                why = f"it started {threads - 1} thread(s), and a zygote with threads cannot fork safely"
            if why is None and written:
                why = "it writes output when imported, which scripts must see"
            if why is not None:
                warnings.append(f"drop {name}")
                warnings.append(f"preload {name} skipped: {why}")
                break  # the zygote starts again without it: nothing after it is imported here
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        if capture is not None:
            os.close(capture)
        try:
            os.chdir(cwd)
        except OSError:
            pass
    return warnings


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
