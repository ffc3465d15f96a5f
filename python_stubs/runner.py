# Per-run runner stub: defined in the zygote; _mpes_prepare() runs in a run's child forked ahead
# of its run, _mpes_run() once the run has arrived and the sandbox is locked down.


def _mpes_zygote_ready():
    # Once, in the zygote, after boot: the interpreter is put in the state every run starts
    # from (environment, streams, argv, path, a pristine __main__), so that a run's child does
    # not redo it. Page faults are what a run costs (copy-on-write of the zygote's pages), and
    # what is done here once is not paid per run. The zygote itself runs no Python afterwards.
    import builtins
    import gc
    import os
    import sys
    import types

    global _MPES_MAIN
    work = _MPES_WORK_DIR or "/"
    env = os.environ
    env._data = {env.encodekey(key): env.encodevalue(value) for key, value in (
        ("PATH", _MPES_RUN_PATH), ("HOME", work), ("TMPDIR", work), ("LANG", "C.UTF-8"),
        ("PYTHONIOENCODING", "utf-8"), ("MPLBACKEND", "Agg"))}
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # computed again from TMPDIR
    sys.stdin, sys.stdout, sys.stderr = _MPES_STREAMS
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = _MPES_STREAMS
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    _MPES_MAIN = main
    sys.argv = ["script.py"]
    sys.path.insert(0, work)

    gc.collect()
    # Objects of the warm interpreter move to the permanent generation: collections in the
    # children never touch (and so never copy) their pages.
    gc.freeze()


def _mpes_prepare():
    # In a run's child forked ahead of its run (cwd = the fresh work dir; the zygote set the C
    # environment): what depends on this process, then a rehearsal.
    import os
    import sys

    global _mpes_zygote
    _mpes_zygote = False
    sys.dont_write_bytecode = False
    work = os.getcwd()
    if work != _MPES_WORK_DIR:  # unsandboxed runs each get their own temporary directory
        env = os.environ
        env._data[env.encodekey("HOME")] = env._data[env.encodekey("TMPDIR")] = env.encodevalue(work)
        sys.path[0] = work
    # The script as a path that exists for this run's processes: multiprocessing's spawn and
    # forkserver start fresh interpreters that re-import __main__ from its file.
    _MPES_MAIN.__file__ = f"/proc/{os.getpid()}/fd/3"

    # What every run does (decode and compile a script) once now, on a one-line script: the
    # allocator's pages shared with the zygote get their copy-on-write copies here rather than
    # after the run arrived (measured: ~110 of ~120 page faults of a hello run move off its path).
    from importlib.util import decode_source
    compile(decode_source(b"print('warm')\n"), "script.py", "exec", dont_inherit=True)


def _mpes_run():
    # The run has arrived: fd 3 holds the script (a sealed memfd), fds 0/1/2 are /dev/null and
    # the run's pipes. Runs the script as __main__ of a fresh module, like `python script.py`,
    # then exits the process itself: nothing of ours runs after the script and its atexit
    # handlers.
    import os
    import sys

    chunks = []
    while True:
        chunk = os.read(3, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    source = b"".join(chunks)
    os.set_inheritable(3, False)  # stays open (it is __main__.__file__), but not in subprocesses

    main = _MPES_MAIN
    zygote_main = sys.modules["__main__"]  # keeps our own globals alive while we run
    sys.modules["__main__"] = main

    # Tracebacks show the user's source lines although no script.py file exists.
    import linecache
    try:
        from importlib.util import decode_source
        text = decode_source(source)
    except Exception:
        text = source.decode("utf-8", "replace")
    linecache.cache["script.py"] = (len(text), None, text.splitlines(True), "script.py")

    code = 0
    try:
        compiled = compile(source, "script.py", "exec", dont_inherit=True)
    except SyntaxError as e:
        _mpes_print_exception(e)
        compiled = None
        code = 1
    except (ValueError, UnicodeDecodeError) as e:  # e.g. null bytes, undecodable source
        print(f"SyntaxError: {e}", file=sys.stderr)
        compiled = None
        code = 1
    if compiled is not None:
        try:
            exec(compiled, main.__dict__)
        except SystemExit as e:
            code = _mpes_exit_code(e)
        except BaseException as e:
            # Skip our own frame: the traceback starts in the user's script.
            if e.__traceback__ is not None:
                e.__traceback__ = e.__traceback__.tb_next
            _mpes_print_exception(e)
            code = 1
            if isinstance(e, KeyboardInterrupt):
                code = -2
    code = _mpes_shutdown(code)
    del zygote_main
    if code == -2:  # like CPython: die of SIGINT after an uncaught KeyboardInterrupt
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF if code >= 0 else 1)


def _mpes_print_exception(e):
    import sys
    if sys.excepthook is sys.__excepthook__:
        # The pure-Python printer reads source lines through linecache, where the runner put
        # the script (there is no script.py file for the C printer to open).
        import traceback
        try:
            traceback.print_exception(type(e), e, e.__traceback__)
            return
        except Exception:
            pass
    sys.excepthook(type(e), e, e.__traceback__)


def _mpes_exit_code(e):
    import sys
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    try:
        print(c, file=sys.stderr)
    except Exception:
        pass
    return 1


def _mpes_shutdown(code):
    # What interpreter shutdown would do: wait for non-daemon threads, run atexit handlers,
    # flush the standard streams.
    import sys
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except SystemExit as e:
        code = _mpes_exit_code(e)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            if stream is sys.stdout and code == 0:
                code = 120  # CPython's status when flushing stdout fails at exit
    return code
