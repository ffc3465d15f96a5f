# Session steps (engine/zygote/session_holder.h): a session's __main__ lives on from step to
# step in a process that forks before each one (the parent stays as the snapshot). A step runs
# as a script does, with what an interactive interpreter adds: the value of its last expression,
# and a traceback that leaves the state as the step left it. What a step does not do is what
# interpreter exit does: no waiting for threads, no atexit, no finalization.
# Set by the holder for each step (C): _MPES_FILES_FD, _MPES_STEP_NUMBER; read back:
# _MPES_STEP_CODE, the step's status.

_MPES_STEP_NUMBER = 0
_MPES_STEP_CODE = 0
_MPES_RANDOM_STATE = None  # in a holder about to fork: `random`'s state, for the child
_MPES_STEP_DIR = ".mpes"  # in the work dir: each step's source, for tracebacks


def _mpes_session_start():
    # In the session's root process, once: the fresh __main__ every state descends from.
    import sys
    global _MPES_STEP_PREFIX, _MPES_KEEP_SLOTS
    sys.modules["__main__"] = _MPES_MAIN
    _MPES_KEEP_SLOTS = True
    _MPES_STEP_PREFIX = f"{_MPES_WORK}/{_MPES_STEP_DIR}/step_"


def _mpes_fork_prepare():
    # A snapshot holds the state of random number generators too: the interpreter reseeds
    # `random` in a forked child, so the child gets this state back (_mpes_forked). numpy's
    # global generator is not reseeded at a session's forks (boot.py's hook is the zygote's).
    import sys
    global _MPES_RANDOM_STATE
    random = sys.modules.get("random")
    try:
        _MPES_RANDOM_STATE = random.getstate() if random is not None else None
    except Exception:
        _MPES_RANDOM_STATE = None


def _mpes_forked():
    import sys
    global _MPES_RANDOM_STATE
    state, _MPES_RANDOM_STATE = _MPES_RANDOM_STATE, None
    if state is not None:
        try:
            sys.modules["random"].setstate(state)
        except Exception:
            pass


_MPES_REHEARSAL_PART = 0  # set by the holder (C) before each part of a spare's rehearsal


def _mpes_step_spare():
    # In a step's process forked ahead: what every step does, rehearsed on a one-line step with
    # no effect a step could see (no output, no frame sent, the session's __main__ and the
    # runner's state untouched, no collection that could run a finalizer of the session's
    # objects here), so that the pages it writes get their copy-on-write copies now rather than
    # on the step's path. In parts (_MPES_REHEARSAL_PART, the most useful first): the holder
    # hands a step that arrives meanwhile over after the part under way. Whatever fails here,
    # the step itself will meet (or not) again.
    import gc
    import os
    collecting = gc.isenabled()
    gc.disable()
    try:
        source = b"1 + 1\n"
        if _MPES_REHEARSAL_PART == 0:  # the step's source, compiled
            from importlib.util import decode_source
            decode_source(source)
            _mpes_compile(source, f"{_MPES_STEP_PREFIX}{_MPES_STEP_NUMBER}.py")
        elif _MPES_REHEARSAL_PART == 1:  # its value, sent
            code, expr = _mpes_compile(source, "<mpes>")
            value = None
            for step, namespace in _mpes_steps(code, expr, {"__builtins__": _MPES_BUILTINS}):
                value = eval(step, namespace)
            data = repr(value).encode("utf-8", "backslashreplace")
            b"".join([len(data).to_bytes(4, "little") + bytes((_MPES_VALUE_REPR,)) + data])  # a frame
            os.fstat(0).st_mode & 0o170000 != 0o010000  # the channel's check
            _mpes_json(value, _MPES_MAX_VALUE_BYTES)
            _mpes_end_record(0)
        else:  # its script read, its (absent) files request taken, its source written
            fd = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
            try:
                b"".join([os.read(fd, 1 << 20)])
                os.set_inheritable(fd, False)
                view = memoryview(source)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            if _MPES_FILES_FD < 0:
                _mpes_take_files_request()  # (resets what the step's own call resets)
            root = os.open(_MPES_WORK, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                try:
                    os.mkdir(_MPES_STEP_DIR, 0o700, dir_fd=root)  # as the step would, first
                except FileExistsError:
                    pass
                os.close(_mpes_open_dir(_MPES_STEP_DIR, root))
            finally:
                os.close(root)
    except BaseException:
        pass
    finally:
        if collecting:
            gc.enable()


def _mpes_step_begin():
    # As _mpes_begin, for a step: the script (fd 3) runs in the session's __main__, compiled
    # under a file name of its own, written to the work dir's .mpes/ so that tracebacks show
    # its lines (also those of functions it defines, called in later steps).
    import os
    import sys
    global _MPES_CHANNEL, _MPES_SENT, _MPES_COMPILE_ERROR, _MPES_SOURCE_FOR_ERRORS, _MPES_STEP_CODE
    global _MPES_HELD

    source = _mpes_read_script()
    _MPES_SENT = False
    _MPES_HELD = None
    _MPES_COMPILE_ERROR = None
    _MPES_SOURCE_FOR_ERRORS = None
    _MPES_STEP_CODE = 0
    try:
        os.set_inheritable(_MPES_RESULT_FD, False)
        _MPES_CHANNEL = True
    except OSError:
        _MPES_CHANNEL = False
    state = _MPES_FIGURES
    if state is not None:  # figures sent by earlier steps and unchanged since are not sent again
        state["sent"], state["dropped"], state["notes"] = 0, 0, []
    _mpes_take_files_request()
    if _MPES_INPUT_ERROR is not None:
        return ()
    sys.modules["__main__"] = _MPES_MAIN
    filename = f"{_MPES_STEP_PREFIX}{_MPES_STEP_NUMBER}.py"
    _mpes_write_step_source(source)
    try:
        code, expr = _mpes_compile(source, filename)
    except (SyntaxError, ValueError) as e:
        if not isinstance(e, SyntaxError):
            e = SyntaxError(str(e))
        e.__traceback__ = None
        _MPES_SOURCE_FOR_ERRORS = source
        _MPES_COMPILE_ERROR = e
        return ()
    return _mpes_steps(code, expr, _MPES_MAIN.__dict__)  # runner.py


def _mpes_write_step_source(source):
    # <work dir>/.mpes/step_N.py, without following a symlink a script may have put there.
    import os
    try:
        root = os.open(_MPES_WORK, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        try:
            os.mkdir(_MPES_STEP_DIR, 0o700, dir_fd=root)
        except FileExistsError:
            pass
        folder = _mpes_open_dir(_MPES_STEP_DIR, root)
        try:
            fd = os.open(f"step_{_MPES_STEP_NUMBER}.py",
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=folder)
            try:
                view = memoryview(source)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        finally:
            os.close(folder)
    except OSError:
        pass  # a full work dir: the step still runs; its tracebacks show no lines
    finally:
        os.close(root)


def _mpes_step_finish():
    _mpes_step_end(None)  # (the value is taken from _MPES_VALUE: no frame of ours keeps it)


def _mpes_step_failed():
    global _MPES_ERROR
    error, _MPES_ERROR = _MPES_ERROR, None
    _mpes_step_end(error)


def _mpes_step_end(error):
    # What the step reports: its exception (the state stays as the step left it), the value of
    # its last expression, figures, output files, flushed streams. Returns to the holder. The
    # frames sent from here on go out in one write, with the end record (the server wakes once).
    import sys
    global _MPES_STEP_CODE, _MPES_HELD
    code = 0
    _MPES_HELD = []
    if _MPES_INPUT_ERROR is not None:
        _mpes_write_stderr(_MPES_INPUT_ERROR + "\n")
        code = 1
    elif _MPES_COMPILE_ERROR is not None:
        code = _mpes_report(_mpes_syntax_error(_MPES_COMPILE_ERROR))
    elif isinstance(error, SystemExit):
        code = _mpes_exit_status(error)
    elif error is not None:
        error.__traceback__ = _mpes_user_traceback(error.__traceback__)
        code = _mpes_report(error)
        if isinstance(error, KeyboardInterrupt) and code == 1:
            code = -2  # as a script killed by SIGINT
    error = None
    _mpes_send_value()
    if _MPES_FIGURES is not None or "matplotlib.pyplot" in sys.modules:
        _mpes_send_figures()
    if not _mpes_flush_std(report=True):
        code = 120
    _mpes_send_outputs()
    if _MPES_SENT:
        _mpes_send_end(code)
    _mpes_send_held()
    _MPES_STEP_CODE = code
