# Per-run runner stub: defined in the zygote; _mpes_prepare() runs in a run's child forked ahead
# of its run; once the run has arrived and the sandbox is locked down, _mpes_begin() and the
# steps it returns, then _mpes_finish() or _mpes_failed() (_mpes_run() on the spawn path).

# The names the interpreter gives a fresh __main__ (the runner is the first code run in it), in
# order: every run's __main__ starts with exactly these.
_MPES_MAIN_NAMES = tuple(name for name in globals() if name.startswith("__"))

# The result channel (engine/execution/result_channel.h): frames of a u32 little-endian payload length, a
# u8 type and the payload, on this fd, for the value of the last expression, figures, notes and
# an end record. The server validates all of it; the script can reach the fd.
_MPES_RESULT_FD = 5
_MPES_VALUE_REPR, _MPES_VALUE_JSON, _MPES_IMAGE_PNG, _MPES_NOTE, _MPES_END = 1, 2, 3, 4, 5
_MPES_MAX_IMAGE_BYTES = 1 << 20
_MPES_MAX_IMAGE_SIDE = 1568
# Set again by the zygote from the server's --max-output-bytes and --max-images.
_MPES_MAX_VALUE_BYTES = 102400
_MPES_MAX_IMAGES = 4
_MPES_CHANNEL = False  # the channel is usable (until a write to it fails)
_MPES_SENT = False  # a frame was sent: the end record must follow
_MPES_HELD = None  # a list while frames are held, to go out in one write (_mpes_send_held)
_MPES_HELD_BYTES = 65536  # at most this much is held: a larger frame goes out with what was held
_MPES_FIGURES = None  # per run: what was done with the figures so far
_MPES_NEXT_UNRAISABLEHOOK = None  # per run: the hook ours hands over to while atexit runs
_MPES_COMPILE_ERROR = None  # per run: the script's SyntaxError
_MPES_SOURCE_FOR_ERRORS = None  # per run: the script's bytes, kept only when it does not compile
_MPES_ENV_EXTRA = ()  # what preloads added to the environment
_MPES_VALUE = None  # per run: the value of the last step (set by the zygote)
_MPES_TYPE, _MPES_ISSUBCLASS = type, issubclass  # as they were: a script may replace builtins'
_MPES_SIGNALS = ()  # the signal numbers, listed once in the zygote (_mpes_signals_fini)
_MPES_ERROR = None  # per run: the exception a step raised (set by the zygote)
_MPES_PRELOAD_ENV = None  # the environment preloads were imported with
_MPES_WORK = None  # the run's work dir (its cwd when it started)
_MPES_STEP_PREFIX = None  # in a session: where its steps' sources are
# Compiler flags: ast.PyCF_ONLY_AST, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT (without importing ast);
# inspect.CO_COROUTINE.
_MPES_ONLY_AST = 0x400
_MPES_TOP_LEVEL_AWAIT = 0x2000
_MPES_CO_COROUTINE = 0x80
_MPES_NOT_ONE_EXPRESSION = None  # set in the zygote: see _mpes_compile


def _mpes_standard_streams():
    # As CPython's create_stdio makes them for a non-interactive process, with
    # PYTHONIOENCODING=utf-8: the raw files named "<stdin>"..., buffered with the block size
    # of the runs' fds (pipes and /dev/null: 4096), "\n" newlines, stderr line-buffered with
    # backslashreplace.
    import io
    streams = []
    for fd, name, errors in ((0, "<stdin>", "strict"), (1, "<stdout>", "strict"),
                             (2, "<stderr>", "backslashreplace")):
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        raw.name = name
        buffered = (io.BufferedReader if fd == 0 else io.BufferedWriter)(raw, 4096)
        text = io.TextIOWrapper(buffered, encoding="utf-8", errors=errors, newline="\n",
                                line_buffering=fd == 2)
        text.mode = "r" if fd == 0 else "w"
        streams.append(text)
    return tuple(streams)


def _mpes_run_environment(home):
    # The environment every run gets (the zygote sets the same in each run's C environment).
    import os
    return {os.environ.encodekey(k): os.environ.encodevalue(v) for k, v in (
        ("PATH", _MPES_RUN_PATH), ("HOME", home), ("TMPDIR", home), ("LANG", "C.UTF-8"),
        ("PYTHONIOENCODING", "utf-8"), ("MPLBACKEND", "Agg"))}


def _mpes_zygote_ready():
    # Once, in the zygote, after boot: the interpreter is put in the state every run starts
    # from (environment, argv, path), so that a run's child does not redo it. Page faults are
    # what a run costs (copy-on-write of the zygote's pages), and what is done here once is not
    # paid per run. The zygote itself runs no Python afterwards.
    import gc
    import os
    import sys

    global _MPES_ENV_EXTRA
    work = _MPES_WORK_DIR or "/"
    env = os.environ
    run_env = _mpes_run_environment(work)
    # What preloads added to (or changed in) the environment stays, as it would have after the
    # script imported them; the C environment of each run gets it too (_mpes_prepare).
    _MPES_ENV_EXTRA = ()
    if _MPES_PRELOAD_ENV is not None:
        _MPES_ENV_EXTRA = tuple((k, v) for k, v in env._data.items()
                                if _MPES_PRELOAD_ENV.get(k) != v and k not in (b"HOME", b"TMPDIR"))
        run_env.update(_MPES_ENV_EXTRA)
    env._data = run_env
    # os.environb and posix.environ share os.environ's mapping, as in any interpreter: they
    # must not show the zygote's own environment.
    if hasattr(os, "environb"):
        os.environb._data = run_env
    import posix
    posix.environ = run_env
    # site's user paths are computed again from the run's HOME (they were from the zygote's).
    site = sys.modules.get("site")
    if site is not None:
        site.USER_BASE = site.USER_SITE = None
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # computed again from TMPDIR
    sys.argv = ["script.py"]
    sys.path.insert(0, work)
    global _MPES_SIGNALS
    import _signal
    _MPES_SIGNALS = tuple(sorted(_signal.valid_signals()))

    # A run with a value serialises it: json is imported once here, not in every such run.
    import json  # noqa: F401
    # What keeps a source from being tried as one expression (_mpes_compile); json imported re.
    import re
    global _MPES_NOT_ONE_EXPRESSION
    _MPES_NOT_ONE_EXPRESSION = re.compile(rb"[\r\n=;:\\]|[0-9][A-Za-z_]")
    # The AST node classes a run needs, without importing ast.
    global _MPES_EXPR, _MPES_EXPRESSION
    _MPES_EXPR = type(compile("0", "<mpes>", "exec", _MPES_ONLY_AST).body[0])
    _MPES_EXPRESSION = type(compile("0", "<mpes>", "eval", _MPES_ONLY_AST))
    global _MPES_ASYNC_CALL, _MPES_MODULE, _MPES_BUILTINS, _MPES_SOURCE_LOADER
    _MPES_ASYNC_CALL = compile("__mpes_async__()", "<string>", "eval")
    # What each run's __main__ is made of (_mpes_prepare).
    import builtins
    from importlib.machinery import SourceFileLoader
    _MPES_MODULE, _MPES_BUILTINS, _MPES_SOURCE_LOADER = type(sys), builtins, SourceFileLoader
    # Figures shown and then closed are captured by wrapping pyplot.show, at import time (the
    # finder is asked only about modules not imported yet, and answers only for pyplot).
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        _mpes_hook_show(plt)
    else:
        sys.meta_path.insert(0, _MpesPyplotFinder)

    gc.collect()
    # Objects of the warm interpreter move to the permanent generation: collections in the
    # children never touch (and so never copy) their pages.
    gc.freeze()


def _mpes_prepare():
    # In a run's child forked ahead of its run (cwd = the fresh work dir; the zygote set the C
    # environment): what depends on this process, then a rehearsal.
    import os
    import sys

    global _mpes_zygote, _MPES_WORK
    _mpes_zygote = False
    sys.dont_write_bytecode = False
    work = _MPES_WORK = os.getcwd()
    env = os.environ
    if work != _MPES_WORK_DIR:  # unsandboxed runs each get their own temporary directory
        env._data[env.encodekey("HOME")] = env._data[env.encodekey("TMPDIR")] = env.encodevalue(work)
        sys.path[0] = work
    for key, value in _MPES_ENV_EXTRA:
        os.putenv(key, value)
    # A fresh __main__ with the names the interpreter gives one, in its order. Made here, not
    # in the zygote: the collector must be able to free it at the end (the zygote's objects
    # are frozen).
    global _MPES_MAIN
    main = _MPES_MODULE("__main__")
    for name in _MPES_MAIN_NAMES:
        if name == "__builtins__":
            main.__builtins__ = _MPES_BUILTINS
        elif name == "__annotations__":
            main.__annotations__ = {}
    _MPES_MAIN = main
    # The script is a file in the work dir, as for `python3 script.py`: __file__, relative
    # imports of what it writes next to itself, multiprocessing's spawn re-importing it.
    path = work + "/script.py"
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = _MPES_SOURCE_LOADER("__main__", path)

    # What every run does (decode and compile a script) once now, on a one-line script: the
    # allocator's pages shared with the zygote get their copy-on-write copies here rather than
    # after the run arrived (measured: ~110 of ~120 page faults of a hello run move off its path).
    from importlib.util import decode_source
    decode_source(b"print('warm')\n")
    _mpes_compile(b"print('warm')\n")


def _mpes_begin():
    # The run has arrived: fd 3 holds the script (a sealed memfd), fds 0/1/2 are /dev/null and
    # the run's pipes. Writes the script into the work dir, compiles it as __main__ of a fresh
    # module and returns the steps that run it: (code, globals) pairs that the zygote evaluates
    # from C, so that the script's frame is the bottom of the stack as in `python3 script.py`.
    # Then _mpes_finish() (the last step's value in _MPES_VALUE) or _mpes_failed() (the
    # exception in _MPES_ERROR) ends the run.
    import os
    import sys

    source = _mpes_read_script()
    global _MPES_CHANNEL, _MPES_COMPILE_ERROR
    try:
        os.set_inheritable(_MPES_RESULT_FD, False)
        _MPES_CHANNEL = True
    except OSError:
        _MPES_CHANNEL = False

    _mpes_take_files_request()  # input files are in place before the script is
    if _MPES_INPUT_ERROR is not None:
        return ()
    main = _MPES_MAIN
    try:
        fd = os.open(main.__file__, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(source)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError:
        pass  # a full work dir: the script still runs, from memory
    sys.modules["__main__"] = main

    try:
        code, expr = _mpes_compile(source)
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes, before 3.11.1
        # As `python3 script.py` shows it: no traceback, the offending line.
        global _MPES_SOURCE_FOR_ERRORS
        _MPES_SOURCE_FOR_ERRORS = source
        if not isinstance(e, SyntaxError):
            e = SyntaxError(str(e))
        e.__traceback__ = None
        _MPES_COMPILE_ERROR = e
        return ()
    return _mpes_steps(code, expr, main.__dict__)


_MPES_KEEP_SLOTS = False  # in a session: fds 0-6 stay taken (session.py)


def _mpes_read_script():
    # The script on fd 3, which is then closed (in a session, left to the holder, which replaces
    # it: a file the step opens must not land in the runner's slots): a sealed memfd, so its
    # size is known and final; read in one call of that size (not into a 1 MiB buffer, mapped
    # and shrunk for a few bytes).
    import os
    size = os.fstat(3).st_size
    chunks = []
    got = 0
    while got < size:
        chunk = os.read(3, size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if not _MPES_KEEP_SLOTS:
        os.close(3)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _mpes_steps(code, expr, namespace):
    # The (code, globals) pairs the zygote evaluates to run a compiled script (or session step)
    # in `namespace`, its last expression's value kept apart.
    if (code is not None and code.co_flags & _MPES_CO_COROUTINE) or (
            expr is not None and expr.co_flags & _MPES_CO_COROUTINE):
        # Top-level await: asyncio runs the script (python3 cannot run it at all).
        import builtins
        call = {"__builtins__": builtins, "__mpes_async__": lambda: _mpes_execute(code, expr, namespace)}
        return ((_MPES_ASYNC_CALL, call),)
    steps = ()
    if code is not None:
        steps += ((code, namespace),)
    if expr is not None:
        steps += ((expr, namespace),)
    return steps


def _mpes_run():
    # The spawn path (no zygote to evaluate the steps from C): the same steps, evaluated here.
    global _MPES_VALUE, _MPES_ERROR
    steps = _mpes_begin()
    try:
        for code, namespace in steps:
            _MPES_VALUE = eval(code, namespace)
    except BaseException as e:
        _MPES_ERROR = e
    steps = code = namespace = None
    if _MPES_ERROR is not None:
        _mpes_failed()
    _mpes_finish()


def _mpes_finish():
    _mpes_end(None)  # (the value is taken from _MPES_VALUE: no frame of ours keeps it alive)


def _mpes_failed():
    global _MPES_ERROR
    error, _MPES_ERROR = _MPES_ERROR, None
    _mpes_end(error)


def _mpes_end(error):
    # What `python3 script.py` does after the script: report an uncaught exception (or the
    # SystemExit), wait for threads, run atexit, flush, finalize __main__, exit. Also sends
    # the value and the figures. Exits the process itself: nothing of ours runs afterwards.
    import os
    import sys

    # The last expression's value: shown, then freed at once, as python3 frees a statement's
    # value (its __del__ runs now, not never).
    _mpes_send_value()
    code = 0
    sigint = False
    if _MPES_COMPILE_ERROR is None and _MPES_INPUT_ERROR is None:
        _mpes_flush_io()
    if _MPES_INPUT_ERROR is not None:
        _mpes_write_stderr(_MPES_INPUT_ERROR + "\n")
        code = 1
    elif _MPES_COMPILE_ERROR is not None:
        code = _mpes_report(_mpes_syntax_error(_MPES_COMPILE_ERROR))
    elif isinstance(error, SystemExit):
        code = _mpes_exit_status(error)
    elif error is not None:
        error.__traceback__ = _mpes_user_traceback(error.__traceback__)
        sigint = isinstance(error, KeyboardInterrupt)
        code = _mpes_report(error)
    exiting = isinstance(error, SystemExit)
    error = None
    if not exiting:
        # python3 then deletes __file__ and __cached__ from __main__ (a SystemExit exits
        # before), so atexit, threads still running and finalizers no longer see them.
        _mpes_forget_file()
    # Before atexit: pyplot closes every figure there.
    if _MPES_FIGURES is not None or "matplotlib.pyplot" in sys.modules:
        _mpes_send_figures()
    code = _mpes_shutdown(code)
    _mpes_send_outputs()  # after exit's flushes and finalizers: the files as the script left them
    if sigint:  # like CPython: die of SIGINT after an uncaught KeyboardInterrupt
        if _MPES_SENT:
            _mpes_send_end(-2)
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    # The end record, then every stream closed: all python3 does at exit is done, so the server
    # can answer now, while this process's memory is still being torn down.
    _mpes_send_end(code)
    for fd in (1, 2, _MPES_RESULT_FD):
        try:
            os.close(fd)
        except OSError:
            pass
    os._exit(code & 0xFF)


def _mpes_flush_io():
    # pythonrun.c's flush_io, right after the script's code: sys.stderr, then sys.stdout, each
    # flushed if it can be, silently.
    import sys
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except BaseException:
            pass


def _mpes_forget_file():
    main = _MPES_MAIN
    if main is None:
        return
    names = main.__dict__
    for name in ("__file__", "__cached__"):
        try:
            del names[name]
        except BaseException:
            pass


def _mpes_syntax_error(e):
    # compile() words two errors differently from python3 reading a file: null bytes, and
    # bytes that are not UTF-8 in a script that declares no encoding.
    msg = e.msg if isinstance(getattr(e, "msg", None), str) else ""
    source = _MPES_SOURCE_FOR_ERRORS
    if "null bytes" in msg and source is not None and b"\0" in source:
        line_no = source.count(b"\n", 0, source.index(b"\0")) + 1
        text = source.split(b"\n")[line_no - 1].split(b"\0")[0].decode("utf-8", "replace")
        err = SyntaxError("source code cannot contain null bytes", ("script.py", line_no, None, text + "\n"))
        err.__traceback__ = None
        return err
    if msg.startswith("(unicode error)") and source is not None:
        from tokenize import detect_encoding
        try:
            declared = detect_encoding(iter(source.splitlines(True)).__next__)[0] != "utf-8"
        except SyntaxError:
            declared = True
        if not declared:
            for line_no, line in enumerate(source.split(b"\n"), 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as bad:
                    byte = line[bad.start]
                    err = SyntaxError(f"Non-UTF-8 code starting with '\\x{byte:02x}' in file "
                                      f"script.py on line {line_no}, but no encoding declared; "
                                      "see https://peps.python.org/pep-0263/ for details")
                    err.__traceback__ = None
                    return err
    return e


def _mpes_report(e):
    # CPython's report of an uncaught exception (_PyErr_PrintEx): sys.last_* set, then
    # sys.excepthook (the C printer by default, which reads the script's lines from its file);
    # a hook that fails is reported with the original. Returns the exit status.
    import sys
    kind, tb = type(e), e.__traceback__
    sys.last_type, sys.last_value, sys.last_traceback = kind, e, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = e
    hook = getattr(sys, "excepthook", _mpes_report)
    if hook is _mpes_report:
        _mpes_write_stderr("sys.excepthook is missing\n")
        sys.__excepthook__(kind, e, tb)
        return 1
    try:
        hook(kind, e, tb)
    except SystemExit as exit_request:
        return _mpes_exit_status(exit_request)
    except BaseException as failure:
        failure.__traceback__ = _mpes_without_runner_frames(failure.__traceback__)
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        _mpes_write_stderr("Error in sys.excepthook:\n")
        sys.__excepthook__(type(failure), failure, failure.__traceback__)
        _mpes_write_stderr("\nOriginal exception was:\n")
        sys.__excepthook__(kind, e, tb)
    return 1


def _mpes_write_stderr(text):
    # PySys_WriteStderr: sys.stderr, or file descriptor 2 when there is none.
    import os
    import sys
    stream = getattr(sys, "stderr", None)
    try:
        if stream is not None:
            stream.write(text)
            return
    except BaseException:
        pass
    try:
        os.write(2, text.encode("utf-8", "backslashreplace"))
    except OSError:
        pass


def _mpes_exit_status(e):
    # CPython's _Py_HandleSystemExit: None is 0; an int is cast to a C int (a value past a C
    # long is -1); anything else is printed to stderr and is 1. The exception and its code are
    # the script's: a `code` that cannot be read means the exception itself is printed, and an
    # int subclass counts by its value, whatever its methods do.
    try:
        code = e.code
    except BaseException:
        code = e
    if code is None:
        return 0
    if _MPES_ISSUBCLASS(_MPES_TYPE(code), int):
        value = int.__index__(code)
        if not -(1 << 63) <= value < (1 << 63):
            return -1
        return ((value & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
    import sys
    stream = getattr(sys, "stderr", None)
    if stream is not None:
        try:
            stream.write(str(code))
        except BaseException:
            pass
    else:
        try:
            text = str(code)
        except BaseException:
            text = ""
        _mpes_write_stderr(text)
    _mpes_write_stderr("\n")
    return 1


def _mpes_shutdown(code):
    # What interpreter shutdown does (Py_FinalizeEx): wait for non-daemon threads, run atexit
    # handlers, flush the standard streams, finalize __main__ (objects still alive at exit get
    # their __del__), flush again. A failed flush makes the status 120.
    import sys
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    # Reports of failing callbacks go through _mpes_unraisablehook, then to the hook in place.
    global _MPES_NEXT_UNRAISABLEHOOK
    _MPES_NEXT_UNRAISABLEHOOK = sys.unraisablehook
    sys.unraisablehook = _mpes_unraisablehook
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    finally:
        if sys.unraisablehook is _mpes_unraisablehook:
            sys.unraisablehook = _MPES_NEXT_UNRAISABLEHOOK
    if not _mpes_flush_std(report=True):
        code = 120
    _mpes_signals_fini()
    _mpes_finalize_main()
    # What finalization printed: CPython flushes it when the streams are freed, silently.
    _mpes_flush_std(report=False)
    return code


def _mpes_signals_fini():
    # _PySignal_Fini, before __main__ is finalized: the script's signal handlers are let go (a
    # handler would otherwise keep __main__ and everything it holds alive, never finalized),
    # and their signals get their default action back. On every run's way out: ~2 us (the
    # signal numbers listed once, in the zygote; no generator).
    import sys
    signal = sys.modules.get("_signal")
    if signal is None:
        return
    try:
        dfl, ign, default_int = signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler
        for number in _MPES_SIGNALS or tuple(signal.valid_signals()):
            handler = signal.getsignal(number)
            if handler is not dfl and handler is not ign and handler is not default_int and handler is not None:
                signal.signal(number, dfl)
    except BaseException:
        pass


def _mpes_flush_std(report):
    # flush_std_files: a failure to flush stdout is reported as unraisable, one of stderr not.
    import sys
    ok = True
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None:
            continue
        try:
            closed = bool(stream.closed)
        except BaseException:
            closed = False
        if closed:
            continue
        try:
            stream.flush()
        except BaseException as e:
            ok = False
            if report and name == "stdout":
                try:
                    head = f"Exception ignored in: {stream!r}\n"
                except BaseException:
                    head = "Exception ignored in: <object repr() failed>\n"
                import traceback
                _mpes_write_stderr(head + "".join(traceback.format_exception_only(type(e), e)))
    return ok


def _mpes_finalize_main():
    # The part of finalize_modules a script can see: the standard streams are reset, sys.last_*
    # cleared, every import fails (as it does in a finalizer at exit: a traceback printed then
    # has no source lines, a warning no line), and __main__ is freed, its objects finalized
    # (cycles by the collector, whose callbacks are not called then). If something still
    # holds it, its globals are set to None as _PyModule_ClearDict does (names with one leading
    # underscore first). Cheap when there is nothing to finalize: no write to shared pages that
    # a run does not need (each costs a copy-on-write fault).
    import builtins
    import gc
    import sys
    import _weakref
    global _MPES_MAIN
    try:
        if sys.stdin is not sys.__stdin__:
            sys.stdin = sys.__stdin__
        if sys.stdout is not sys.__stdout__:
            sys.stdout = sys.__stdout__
        if sys.stderr is not sys.__stderr__:
            sys.stderr = sys.__stderr__
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            if getattr(sys, name, None) is not None:
                setattr(sys, name, None)
    except BaseException:
        pass
    main = _MPES_MAIN
    _MPES_MAIN = None
    importer = builtins.__import__
    builtins.__import__ = _mpes_import_at_exit
    callbacks = None
    if gc.callbacks:
        callbacks = gc.callbacks[:]
        gc.callbacks.clear()
    try:
        alive = _weakref.ref(main)
        if sys.modules.get("__main__") is main:
            sys.modules["__main__"] = None
        del main
        gc.collect()
        main = alive()
        if main is not None:
            names = main.__dict__
            for first in (True, False):
                for key in list(names):
                    if not isinstance(key, str) or names.get(key) is None:
                        continue
                    if first and not (key[:1] == "_" and key[1:2] != "_"):
                        continue
                    if not first and key == "__builtins__":
                        continue
                    names[key] = None
            del main, names
            gc.collect()
    except BaseException:
        pass
    builtins.__import__ = importer
    if callbacks is not None:
        gc.callbacks[:] = callbacks


def _mpes_import_at_exit(name, *args, **kwargs):
    # What an import meets once CPython has emptied sys.modules at exit.
    raise ImportError("sys.meta_path is None, Python is likely shutting down")


def _mpes_unraisablehook(args):
    # While atexit callbacks run. An exception raised in C by a callback
    # (atexit.register(sys.exit, 3)) has no traceback of its own, and CPython then gives it one
    # from the current frame: _mpes_shutdown's. At a real exit there is no Python frame, so the
    # report shows none: neither do we.
    import sys
    tb = args.exc_traceback
    while tb is not None and tb.tb_frame.f_code is _mpes_shutdown.__code__:
        tb = tb.tb_next
    hook = _MPES_NEXT_UNRAISABLEHOOK
    if hook is not sys.__unraisablehook__:
        hook(type(args)((args.exc_type, args.exc_value, tb, args.err_msg, args.object)))
        return
    # CPython's own report, printed with the pure-Python printer: it reads the script's lines
    # through linecache, as the C printer reads them from the file.
    import traceback
    try:
        head = f"{args.err_msg or 'Exception ignored in'}: {args.object!r}\n"
    except BaseException:
        head = f"{args.err_msg or 'Exception ignored in'}: <object repr() failed>\n"
    try:
        sys.stderr.write(head + "".join(traceback.format_exception(args.exc_type, args.exc_value, tb)))
        sys.stderr.flush()
    except BaseException:
        pass


def _mpes_compile(source, filename="script.py"):
    # (module code, last expression code): when the module's last statement is an expression
    # it is compiled apart, so that its value can be returned (Jupyter's semantics). Both keep
    # the script's line numbers; top-level await makes either a coroutine.
    flags = _MPES_TOP_LEVEL_AWAIT
    # One line that is one expression (`x + 1`, `df.head()`, `print('hello')`) is compiled once,
    # as an expression, rather than parsed to a tree and compiled again from it. Only a line that
    # cannot make the compiler warn and then fail is tried, so that each warning (an invalid
    # escape, `is` with a literal, `1if`) is given once, by whichever compile succeeds: no `=`,
    # `;` or `:` (an assignment, two statements, an annotation: an expression first, then not
    # one), no backslash (escapes), no digit followed by a letter (a literal run into a keyword).
    # Those go the long way, as does everything when the pattern is not there (no zygote).
    pattern = _MPES_NOT_ONE_EXPRESSION
    if pattern is not None and pattern.search(source.rstrip()) is None:
        try:
            return None, compile(source, filename, "eval", flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            pass  # not an expression: compiled as a module below
    tree = compile(source, filename, "exec", flags | _MPES_ONLY_AST, dont_inherit=True)
    body = tree.body
    expr = None
    if body and type(body[-1]) is _MPES_EXPR:
        expr = compile(_MPES_EXPRESSION(body.pop().value), filename, "eval", flags, dont_inherit=True)
    code = compile(tree, filename, "exec", flags, dont_inherit=True) if body or expr is None else None
    return code, expr


def _mpes_execute(code, expr, namespace):
    # Runs the module, then returns the value of its last expression (None when there is none).
    body_async = code is not None and code.co_flags & _MPES_CO_COROUTINE
    expr_async = expr is not None and expr.co_flags & _MPES_CO_COROUTINE
    if not body_async:
        if code is not None:
            exec(code, namespace)
        if expr is None:
            return None
        if not expr_async:
            return eval(expr, namespace)
        import asyncio
        return asyncio.run(eval(expr, namespace))
    import asyncio

    async def module():  # one event loop for the module and its last expression
        await eval(code, namespace)
        if expr is None:
            return None
        value = eval(expr, namespace)
        return (await value) if expr_async else value
    return asyncio.run(module())


def _mpes_without_runner_frames(tb):
    # A traceback from a call the runner made: the runner's own frames (file "<string>") left out.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>" and \
            tb.tb_frame.f_code.co_name.startswith("_mpes"):
        tb = tb.tb_next
    return tb


def _mpes_user_traceback(tb):
    # The traceback starts in the user's script: our frames (and asyncio's, for top-level
    # await) are left out.
    t = tb
    while t is not None and not _mpes_user_file(t.tb_frame.f_code.co_filename):
        t = t.tb_next
    if t is None and tb is not None:
        return tb.tb_next
    return t


def _mpes_user_file(filename):
    # The script's own file, or in a session one of its steps' (python_stubs/session.py).
    return filename == "script.py" or (_MPES_STEP_PREFIX is not None and filename.startswith(_MPES_STEP_PREFIX))


def _mpes_send(kind, payload):
    # One frame on the result channel; False when the channel is gone (closed or replaced by
    # the script: then nothing more is sent, and the run simply has no value).
    global _MPES_CHANNEL, _MPES_SENT
    if not _MPES_CHANNEL:
        return False
    _MPES_SENT = True
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "backslashreplace")
    frame = len(payload).to_bytes(4, "little") + bytes((kind,)) + payload
    if _MPES_HELD is not None:
        _MPES_HELD.append(frame)
        if sum(map(len, _MPES_HELD)) <= _MPES_HELD_BYTES:
            return True
        return _mpes_send_held()  # (and no more holding)
    return _mpes_write_frames(frame)


def _mpes_send_held():
    # The frames held since _MPES_HELD was set, in one write (the server wakes once for them).
    global _MPES_HELD
    held, _MPES_HELD = _MPES_HELD, None
    if not held or not _MPES_CHANNEL:
        return _MPES_CHANNEL
    return _mpes_write_frames(held[0] if len(held) == 1 else b"".join(held))


def _mpes_write_frames(frame):
    global _MPES_CHANNEL
    import os
    try:
        # Still a pipe: a script that closed the fd and opened a file on its number does not
        # get our frames written into that file.
        if os.fstat(_MPES_RESULT_FD).st_mode & 0o170000 != 0o010000:  # S_ISFIFO
            raise OSError("the result channel is gone")
        written = os.write(_MPES_RESULT_FD, frame)
        if written < len(frame):  # only for frames over PIPE_BUF
            view = memoryview(frame)[written:]
            while view:
                view = view[os.write(_MPES_RESULT_FD, view):]
    except OSError:
        _MPES_CHANNEL = False
        return False
    return True


def _mpes_bound(data, limit):
    # Head and tail of an over-long text with a marker between, as the server keeps stdout.
    budget = max(0, limit - len(f"\n[... {len(data)} bytes dropped ...]\n"))
    head = data[:budget * 2 // 5].decode("utf-8", "ignore").encode()
    tail = data[len(data) - (budget - len(head)):] if budget > len(head) else b""
    tail = tail.decode("utf-8", "ignore").encode()
    marker = f"\n[... {len(data) - len(head) - len(tail)} bytes dropped ...]\n".encode()
    return (head + marker + tail)[:limit]


def _mpes_shown_error(e):
    # "Type: message" of an exception the script's code raised, for a note: its type's name and
    # its str() are the script's code too (either may raise), and the text is escaped as a file
    # name is (_mpes_shown), so that it cannot add lines of its own to the result.
    try:
        name = type(e).__name__
        name = name if type(name) is str else "an exception"
    except BaseException:
        name = "an exception"
    try:
        message = str(e)
        message = message if type(message) is str else ""
    except BaseException:
        message = "<str() failed>"
    text = f"{name}: {message}" if message else name
    return _mpes_shown(text[:1000])  # (files.py: escaped as file names are)


def _mpes_send_value():
    # The value of the last expression (_MPES_VALUE), taken so that it is freed when this
    # returns. It is the script's: its repr and its conversion to JSON run its code, whatever
    # they raise is a note, never a traceback of ours or a changed exit status.
    global _MPES_VALUE
    value, _MPES_VALUE = _MPES_VALUE, None
    if value is None:
        return
    try:
        text = repr(value)
        if type(text) is not str:
            raise TypeError("__repr__ returned a non-string")
    except BaseException as e:
        _mpes_send(_MPES_NOTE, f"the last expression's value has no repr ({_mpes_shown_error(e)})")
        return
    limit = _MPES_MAX_VALUE_BYTES
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > limit:
        _mpes_send(_MPES_VALUE_REPR, _mpes_bound(data, limit))
        return  # no JSON for a value too big to show whole
    if _mpes_send(_MPES_VALUE_REPR, data):
        try:
            data = _mpes_json(value, limit)
        except BaseException:  # the value's own code (a `size` property, a dict's keys, ...)
            data = None
        if data is not None:
            _mpes_send(_MPES_VALUE_JSON, data)


def _mpes_json(value, limit):
    # The value as JSON after its natural conversion (numpy scalars and arrays, pandas objects;
    # only when the script imported them), or None.
    # What json.dumps gives them, without its encoder (most values a step shows are these). The
    # value's repr was made first, so an int here is within the interpreter's digit limit.
    if value is None or type(value) is bool:
        return b"null" if value is None else b"true" if value else b"false"
    if type(value) is int:
        data = str(value).encode()
        return data if len(data) <= limit else None
    import sys
    np = sys.modules.get("numpy")
    pd = sys.modules.get("pandas")
    if not _mpes_plain(value, np, pd, limit):
        return None
    if (np is not None and type(value) is np.ndarray) or (
            pd is not None and (type(value) is pd.DataFrame or type(value) is pd.Series)):
        if value.size * 2 > limit:
            return None  # an array's repr is summarised, its JSON would not be

    def natural(o):
        if np is not None:
            if isinstance(o, np.generic):
                return o.item()
            if isinstance(o, np.ndarray):
                return o.tolist()
        if pd is not None:
            if isinstance(o, pd.DataFrame):
                return o.to_dict()
            if isinstance(o, pd.Series):
                return o.tolist()
        raise TypeError(f"{type(o).__name__} is not JSON serializable")
    try:
        import json
        data = json.dumps(value, default=natural, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except Exception:  # not serialisable, NaN, a cycle, too deep, lone surrogates
        return None
    return data if len(data) <= limit else None


def _mpes_plain(value, np, pd, limit):
    # Whether json.dumps can turn `value` into JSON without running the script's code: python3
    # never converts a value, so nothing of its own may run for it (a dict subclass's items(),
    # a list subclass's __iter__, an object's __class__ asked by isinstance). Built-in
    # containers of their exact types, strings and numbers (json reads their subclasses'
    # values, not their methods), numpy's scalars and arrays, pandas' frames and series.
    plain = (str, int, float)
    stack = [value]
    budget = max(limit // 2, 1)
    while stack:
        budget -= 1
        if budget < 0:
            return False
        o = stack.pop()
        t = type(o)
        if o is None or _MPES_ISSUBCLASS(t, plain):
            continue
        if t is list or t is tuple:
            stack.extend(o)
        elif t is dict:
            for k, v in o.items():
                if not (k is None or _MPES_ISSUBCLASS(type(k), plain)):
                    return False
                stack.append(v)
        elif np is not None and ((_MPES_ISSUBCLASS(t, np.generic) and t.__module__ == "numpy") or
                                 (t is np.ndarray and o.dtype != object)):
            continue
        elif pd is not None and (t is pd.DataFrame or t is pd.Series):
            continue
        else:
            return False
    return True


def _mpes_end_record(code):
    # The exit status and this process's CPU times (os.times(): its own and its reaped
    # children's), for a server that wants to answer before the process is gone.
    import os
    t = os.times()
    status = code & 0xFF if code >= 0 else max(code, -(1 << 31))
    return (status.to_bytes(4, "little", signed=True) +
            int(t[0] * 1e6).to_bytes(8, "little", signed=True) +
            int(t[1] * 1e6).to_bytes(8, "little", signed=True) +
            int(t[2] * 1e6).to_bytes(8, "little", signed=True) +
            int(t[3] * 1e6).to_bytes(8, "little", signed=True))


def _mpes_send_end(code):
    _mpes_send(_MPES_END, _mpes_end_record(code))


class _MpesPyplotFinder:
    # On sys.meta_path: when matplotlib.pyplot is imported, its show() gets wrapped.
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        try:
            import sys
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is cls or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            loader = spec.loader
            exec_module = loader.exec_module

            def exec_and_hook(module):
                exec_module(module)
                _mpes_hook_show(module)
            loader.exec_module = exec_and_hook
            return spec
        except Exception:
            return None  # the import proceeds as it would without us


def _mpes_hook_show(plt):
    show = getattr(plt, "show", None)
    if show is None or getattr(show, "_mpes_show", None) is not None:
        return

    def wrapper(*args, **kwargs):
        result = show(*args, **kwargs)  # a no-op under Agg: the figures stay open
        _mpes_capture_figures()
        return result
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(show, attr))
        except Exception:
            pass
    wrapper.__wrapped__ = wrapper._mpes_show = show
    plt.show = wrapper


def _mpes_capture_figures():
    # Renders the open figures not rendered yet, or changed since, as PNG frames. What the
    # script can see of a figure is left as it was: its `stale` flag, and nothing printed or
    # logged while rendering. Changes after a render are noticed through the figure's stale
    # callback (every change of an artist reaches it).
    import sys
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return
    global _MPES_FIGURES
    if _MPES_FIGURES is None:
        _MPES_FIGURES = {"sent": 0, "dropped": 0, "seen": {}, "notes": []}
    state = _MPES_FIGURES
    try:
        managers = sorted(helpers.Gcf.get_all_fig_managers(), key=lambda m: m.num)
        for manager in managers:
            fig = manager.canvas.figure
            seen = state["seen"].get(id(fig))
            if seen is not None and seen[0] is fig and not seen[1]:
                continue  # rendered, unchanged since
            if not fig.axes and not fig.lines:
                continue  # an empty figure (e.g. cleared after show) is no image
            was_stale = fig.stale
            if state["sent"] >= _MPES_MAX_IMAGES:
                state["dropped"] += 1
            else:
                png = _mpes_quietly(_mpes_render, fig, state["notes"])
                if png is not None and _mpes_send(_MPES_IMAGE_PNG, png):
                    state["sent"] += 1
            if seen is None or seen[0] is not fig:
                seen = state["seen"][id(fig)] = [fig, False]
                _mpes_watch_changes(fig, seen)
            seen[1] = False
            fig._stale = was_stale  # as the script left it (rendering cleared it)
    except BaseException as e:  # the script's artists run here: whatever they raise is a note
        state["notes"].append(f"figures could not be captured ({_mpes_shown_error(e)})")


def _mpes_watch_changes(fig, seen):
    # seen[1] becomes True when anything in the figure changes.
    callback = fig.stale_callback

    def stale_callback(artist, value):
        if value:
            seen[1] = True
        if callback is not None:
            callback(artist, value)
    fig.stale_callback = stale_callback


def _mpes_quietly(function, *args):
    # Calls function with the standard streams going nowhere and logging off: what rendering
    # prints or logs (a missing font, a layout warning) is not the script's output.
    import io
    import sys
    logging = sys.modules.get("logging")
    streams = (sys.stdout, sys.stderr)
    disabled = None
    if logging is not None:
        disabled = logging.root.manager.disable
        logging.disable(logging.CRITICAL)
    sys.stdout = sys.stderr = io.StringIO()
    try:
        return function(*args)
    finally:
        sys.stdout, sys.stderr = streams
        if logging is not None:
            logging.disable(disabled)


def _mpes_render(fig, notes):
    # PNG within _MPES_MAX_IMAGE_SIDE px and _MPES_MAX_IMAGE_BYTES: at the figure's own dpi
    # when it fits, else at a lower one.
    import io
    try:
        w, h = fig.get_size_inches()
        dpi = float(fig.dpi)
        if max(w, h) * dpi > _MPES_MAX_IMAGE_SIDE:
            dpi = _MPES_MAX_IMAGE_SIDE / max(w, h)
        for _ in range(4):
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi)
            data = buf.getvalue()
            side = max(int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"))
            if len(data) <= _MPES_MAX_IMAGE_BYTES and 0 < side <= _MPES_MAX_IMAGE_SIDE:
                return data
            dpi *= 0.95 * min(_MPES_MAX_IMAGE_SIDE / max(side, 1),
                              (_MPES_MAX_IMAGE_BYTES / len(data)) ** 0.5)
        notes.append(f"figure {fig.number} left out: no PNG of it fits 1 MiB")
    except BaseException as e:
        notes.append(f"a figure could not be rendered ({_mpes_shown_error(e)})")
    return None


def _mpes_send_figures():
    # At the end of a run: figures still open (or changed since shown), then the notes.
    _mpes_capture_figures()
    state = _MPES_FIGURES
    if state is None:
        return
    for note in state["notes"][:4]:
        _mpes_send(_MPES_NOTE, note)
    n = state["dropped"]
    if n:
        _mpes_send(_MPES_NOTE, f"{n} figure{'s' if n != 1 else ''} dropped (--max-images {_MPES_MAX_IMAGES})")
