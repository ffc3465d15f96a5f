# Per-run runner stub: defined in the zygote; _mpes_prepare() runs in a run's child forked ahead
# of its run, _mpes_run() once the run has arrived and the sandbox is locked down.

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
_MPES_FIGURES = None  # per run: what was done with the figures so far
_MPES_NEXT_UNRAISABLEHOOK = None  # per run: the hook ours hands over to while atexit runs
# Compiler flags: ast.PyCF_ONLY_AST, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT (without importing ast);
# inspect.CO_COROUTINE.
_MPES_ONLY_AST = 0x400
_MPES_TOP_LEVEL_AWAIT = 0x2000
_MPES_CO_COROUTINE = 0x80


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

    # A run with a value serialises it: json is imported once here, not in every such run.
    import json  # noqa: F401
    # The AST node classes a run needs, without importing ast.
    global _MPES_EXPR, _MPES_EXPRESSION
    _MPES_EXPR = type(compile("0", "<mpes>", "exec", _MPES_ONLY_AST).body[0])
    _MPES_EXPRESSION = type(compile("0", "<mpes>", "eval", _MPES_ONLY_AST))
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
    decode_source(b"print('warm')\n")
    _mpes_compile(b"print('warm')\n")


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
    global _MPES_CHANNEL
    try:
        os.set_inheritable(_MPES_RESULT_FD, False)
        _MPES_CHANNEL = True
    except OSError:
        _MPES_CHANNEL = False

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
    compiled = None
    try:
        compiled = _mpes_compile(source)
    except SyntaxError as e:
        # As `python script.py` shows it: no traceback, the offending line.
        e.__traceback__ = None
        if e.text is None and e.filename == "script.py" and e.lineno:
            e.text = linecache.getline("script.py", e.lineno) or None
        _mpes_print_exception(e)
        code = 1
    except (ValueError, UnicodeDecodeError) as e:  # e.g. null bytes, undecodable source
        print(f"SyntaxError: {e}", file=sys.stderr)
        code = 1
    value = None
    if compiled is not None:
        try:
            value = _mpes_execute(compiled[0], compiled[1], main.__dict__)
        except SystemExit as e:
            code = _mpes_exit_code(e)
        except BaseException as e:
            e.__traceback__ = _mpes_user_traceback(e.__traceback__)
            _mpes_print_exception(e)
            code = 1
            if isinstance(e, KeyboardInterrupt):
                code = -2
    if value is not None:
        _mpes_send_value(value)
        value = None
    # Before atexit: pyplot closes every figure there.
    if _MPES_FIGURES is not None or "matplotlib.pyplot" in sys.modules:
        _mpes_send_figures()
    code = _mpes_shutdown(code)
    if _MPES_SENT:  # a run that sent nothing (the common case) needs no end record either
        _mpes_send_end(code)
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
    # Reports of failing callbacks go through _mpes_unraisablehook, then to the hook in place.
    global _MPES_NEXT_UNRAISABLEHOOK
    _MPES_NEXT_UNRAISABLEHOOK = sys.unraisablehook
    sys.unraisablehook = _mpes_unraisablehook
    try:
        import atexit
        atexit._run_exitfuncs()
    except SystemExit as e:
        code = _mpes_exit_code(e)
    except BaseException:
        pass
    finally:
        if sys.unraisablehook is _mpes_unraisablehook:
            sys.unraisablehook = _MPES_NEXT_UNRAISABLEHOOK
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            if stream is sys.stdout and code == 0:
                code = 120  # CPython's status when flushing stdout fails at exit
    return code


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
    # through linecache (the C printer looks for a script.py file, which there is not).
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


def _mpes_compile(source):
    # (module code, last expression code): when the module's last statement is an expression
    # it is compiled apart, so that its value can be returned (Jupyter's semantics). Both keep
    # the script's line numbers; top-level await makes either a coroutine.
    flags = _MPES_TOP_LEVEL_AWAIT
    tree = compile(source, "script.py", "exec", flags | _MPES_ONLY_AST, dont_inherit=True)
    body = tree.body
    expr = None
    if body and type(body[-1]) is _MPES_EXPR:
        expr = compile(_MPES_EXPRESSION(body.pop().value), "script.py", "eval", flags, dont_inherit=True)
    code = compile(tree, "script.py", "exec", flags, dont_inherit=True) if body or expr is None else None
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


def _mpes_user_traceback(tb):
    # The traceback starts in the user's script: our frames (and asyncio's, for top-level
    # await) are left out.
    t = tb
    while t is not None and t.tb_frame.f_code.co_filename != "script.py":
        t = t.tb_next
    if t is None and tb is not None:
        return tb.tb_next
    return t


def _mpes_send(kind, payload):
    # One frame on the result channel; False when the channel is gone (closed or replaced by
    # the script: then nothing more is sent, and the run simply has no value).
    global _MPES_CHANNEL, _MPES_SENT
    if not _MPES_CHANNEL:
        return False
    _MPES_SENT = True
    import os
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "backslashreplace")
    frame = len(payload).to_bytes(4, "little") + bytes((kind,)) + payload
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


def _mpes_send_value(value):
    try:
        text = repr(value)
    except Exception as e:
        _mpes_send(_MPES_NOTE, f"the last expression's value has no repr ({type(e).__name__}: {e})"[:1000])
        return
    limit = _MPES_MAX_VALUE_BYTES
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > limit:
        _mpes_send(_MPES_VALUE_REPR, _mpes_bound(data, limit))
        return  # no JSON for a value too big to show whole
    if _mpes_send(_MPES_VALUE_REPR, data):
        data = _mpes_json(value, limit)
        if data is not None:
            _mpes_send(_MPES_VALUE_JSON, data)


def _mpes_json(value, limit):
    # The value as JSON after its natural conversion (numpy scalars and arrays, pandas objects;
    # only when the script imported them), or None.
    import sys
    np = sys.modules.get("numpy")
    pd = sys.modules.get("pandas")
    if np is not None or pd is not None:
        size = getattr(value, "size", None)
        if isinstance(size, int) and size * 2 > limit:
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
    # Renders the open figures not rendered yet, or changed since (stale), as PNG frames.
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
            if id(fig) in state["seen"] and not fig.stale:
                continue
            state["seen"][id(fig)] = fig
            if not fig.axes and not fig.lines:
                continue  # an empty figure (e.g. cleared after show) is no image
            if state["sent"] >= _MPES_MAX_IMAGES:
                state["dropped"] += 1
            else:
                png = _mpes_render(fig, state["notes"])
                if png is not None and _mpes_send(_MPES_IMAGE_PNG, png):
                    state["sent"] += 1
            fig.stale = False  # drawn as it is now (rendering at another dpi left it "stale")
    except Exception as e:
        state["notes"].append(f"figures could not be captured ({type(e).__name__}: {e})"[:1000])


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
    except Exception as e:
        notes.append(f"a figure could not be rendered ({type(e).__name__}: {e})"[:1000])
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
