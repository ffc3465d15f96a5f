# Files in and out of a run's work dir (the request's layout: engine/files/work_files.h):
# input files written before the script, output files matched after it and sent back as `file`
# frames on the result channel. Every path is resolved one directory fd at a time, never
# following a symlink: a script can plant symlinks in its work dir (in a session, for a later
# step), and none is followed, whatever it points to.

_MPES_FILES_FD = -1  # set by the zygote for each run: the fd of its files request, or -1
_MPES_FILES_MAGIC = b"MPESF2\n"
_MPES_FILE_FRAME = 6
_MPES_OUTPUTS = None  # per run: (globs, max bytes, max files, max path bytes, max depth) when asked for
_MPES_INPUT_ERROR = None  # per run: why the input files could not be written
_MPES_MAX_WALK = 20000  # directory entries looked at while matching output globs


def _mpes_take_files_request():
    # Reads and closes the run's files request; writes its input files into the work dir and
    # keeps what it asks back. Sets _MPES_INPUT_ERROR when an input cannot be written.
    import os
    global _MPES_FILES_FD, _MPES_OUTPUTS, _MPES_INPUT_ERROR
    _MPES_OUTPUTS = None
    _MPES_INPUT_ERROR = None
    fd, _MPES_FILES_FD = _MPES_FILES_FD, -1
    if fd < 0:
        return
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if not _MPES_KEEP_SLOTS:  # (in a session the holder replaces it: runner.py)
            os.close(fd)
    data = memoryview(b"".join(chunks))
    try:
        inputs, globs, bounds = _mpes_parse_files_request(data)
    except ValueError as e:
        _MPES_INPUT_ERROR = f"the files request is malformed ({e})"
        return
    if globs:
        _MPES_OUTPUTS = (globs,) + bounds
    if inputs:
        _MPES_INPUT_ERROR = _mpes_write_inputs(_MPES_WORK, inputs)


def _mpes_parse_files_request(data):
    magic = _MPES_FILES_MAGIC
    if bytes(data[:len(magic)]) != magic:
        raise ValueError("bad magic")
    at = len(magic)

    def take(n):
        nonlocal at
        if n < 0 or at + n > len(data):
            raise ValueError("truncated")
        piece = data[at:at + n]
        at += n
        return piece

    def number(n):
        return int.from_bytes(take(n), "little")

    inputs = []
    for _ in range(number(4)):
        path = bytes(take(number(4))).decode("utf-8")
        inputs.append((path, take(number(8))))
    globs = []
    for _ in range(number(4)):
        globs.append(bytes(take(number(4))).decode("utf-8"))
    bounds = (number(8), number(4), number(4), number(4))  # bytes, files, path bytes, depth
    if at != len(data):
        raise ValueError("trailing bytes")
    return inputs, globs, bounds


def _mpes_open_dir(name, dir_fd):
    import os
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _mpes_write_inputs(work, inputs):
    # None, or why an input file could not be written (nothing after it is written).
    import os
    root = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for path, content in inputs:
            parts = path.split("/")
            opened = []
            current = root
            try:
                for i, part in enumerate(parts[:-1]):
                    try:
                        os.mkdir(part, 0o755, dir_fd=current)
                    except FileExistsError:
                        pass
                    try:
                        current = _mpes_open_dir(part, current)
                    except OSError:
                        where = "/".join(parts[:i + 1])
                        return (f"input file {path!r}: {where!r} is not a directory of the work dir "
                                "(a symlink is never followed)")
                    opened.append(current)
                problem = _mpes_replace_file(current, parts[-1], content)
                if problem is not None:
                    return f"input file {path!r}{problem}"
            finally:
                for fd in opened:
                    os.close(fd)
    finally:
        os.close(root)
    return None


def _mpes_replace_file(dir_fd, name, content):
    # Puts `content` at `name` in the directory `dir_fd` as a new file: written under a temporary
    # name of its own (O_EXCL) in that directory, then renamed over whatever was at `name`. What
    # an earlier step left there is replaced, never written through: a hard link's other names,
    # a FIFO, a read-only file keep what they were, and a failed write leaves the old file as it
    # was. A symlink at `name` is refused (README: a path through one is refused). None, or the
    # end of the message saying why not.
    import errno
    import os
    import stat
    try:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return " is a symlink in the work dir: refused (never followed)"
    except FileNotFoundError:
        pass
    except OSError as e:
        return f": {e.strerror}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        temporary = ".mpes-input-" + os.urandom(8).hex()
        try:
            out = os.open(temporary, flags, 0o644, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
        except OSError as e:
            return f": {e.strerror}"
    else:
        return ": no temporary name was free in its directory"
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as e:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        if e.errno == errno.EISDIR:
            return " is a directory in the work dir"
        return f": {e.strerror}"
    return None


def _mpes_glob_magic(component):
    return any(c in component for c in "*?[")


def _mpes_match_outputs(root, globs, max_depth):
    # ({relative path: "file" | "symlink" | "other"} for every match of `globs` under the
    # directory fd `root`, the patterns that matched nothing, and what the walk left aside: a
    # dict with "cut" (over _MPES_MAX_WALK entries), "deep" (directories below `max_depth`
    # levels, whose files could not come back) and "unreadable" (directories it could not
    # list, with why)). As glob does: `*`, `?` and `[...]` within one name, `**` for any number
    # of directories; names starting with "." only when the pattern's name does; a directory
    # matched by a wildcard is passed over. Symlinks are reported, never followed or descended.
    # At most max_depth directories are open at once.
    import fnmatch
    import os
    import stat
    found = {}
    budget = [_MPES_MAX_WALK]
    aside = {"cut": False, "deep": False, "unreadable": []}

    def names_in(dfd, prefix):
        out = []
        try:
            with os.scandir(dfd) as it:
                for entry in it:
                    budget[0] -= 1
                    if budget[0] < 0:
                        aside["cut"] = True
                        break
                    out.append(entry.name)
        except OSError as e:
            aside["unreadable"].append(f"{_mpes_shown(prefix) or './'} ({e.strerror})")
        return sorted(out)

    def visit(dfd, prefix, comps):
        if budget[0] < 0:
            return
        if prefix.count("/") >= max_depth:  # what is in here would be deeper than a path may be
            aside["deep"] = True
            return
        comp, rest = comps[0], comps[1:]
        if comp == "**":
            if rest:
                visit(dfd, prefix, rest)
            else:
                rest = ("*",)
                visit(dfd, prefix, rest)
            for name in names_in(dfd, prefix):
                if name.startswith("."):
                    continue
                try:
                    sub = _mpes_open_dir(name, dfd)
                except OSError:
                    continue
                try:
                    visit(sub, prefix + name + "/", ("**",) + tuple(rest))
                finally:
                    os.close(sub)
            return
        wildcard = _mpes_glob_magic(comp)
        if wildcard:
            names = [n for n in names_in(dfd, prefix) if fnmatch.fnmatchcase(n, comp) and
                     (not n.startswith(".") or comp.startswith("."))]
        else:
            names = [comp]
        for name in names:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if rest:
                if not stat.S_ISDIR(st.st_mode):
                    continue
                try:
                    sub = _mpes_open_dir(name, dfd)
                except OSError:
                    continue
                try:
                    visit(sub, prefix + name + "/", rest)
                finally:
                    os.close(sub)
            elif not (wildcard and stat.S_ISDIR(st.st_mode)):
                kind = ("file" if stat.S_ISREG(st.st_mode) else
                        "symlink" if stat.S_ISLNK(st.st_mode) else "other")
                found.setdefault(prefix + name, kind)

    unmatched = []
    for pattern in globs:
        before = len(found)
        visit(root, "", tuple(pattern.split("/")))
        if len(found) == before:
            unmatched.append(pattern)
    return found, unmatched, aside


def _mpes_read_beneath(root, path, limit):
    # The bytes of the regular file `path` under `root`, or None (not a regular file); at most
    # limit + 1 bytes are read.
    import os
    import stat
    parts = path.split("/")
    opened = []
    current = root
    try:
        for part in parts[:-1]:
            current = _mpes_open_dir(part, current)
            opened.append(current)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=current)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        for fd in opened:
            os.close(fd)


_MPES_SHOWN_ESCAPES = {0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def _mpes_shown(name):
    # A file name (the script chose it) as a note shows it: on one line and unambiguous, as
    # mcp/run_result_format.h's shown_file_name shows it in the files section. Backslash, control
    # characters (C0, DEL, C1) and undecodable bytes (surrogate-escaped) as escapes, line
    # separators and bidirectional controls as \uNNNN.
    out = []
    for c in name:
        n = ord(c)
        if n in _MPES_SHOWN_ESCAPES:
            out.append(_MPES_SHOWN_ESCAPES[n])
        elif n < 0x20 or 0x7F <= n <= 0x9F:
            out.append("\\x%02x" % n)
        elif 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append("\\x%02x" % (n - 0xDC00))
        elif n in (0x2028, 0x2029, 0x200E, 0x200F) or 0x202A <= n <= 0x202E or 0x2066 <= n <= 0x2069:
            out.append("\\u%04x" % n)
        else:
            out.append(c)
    return "".join(out)


def _mpes_send_outputs():
    # The run's output files as `file` frames within its byte and count bounds; what is left
    # out, refused or unmatched is said in notes.
    import os
    global _MPES_OUTPUTS
    request, _MPES_OUTPUTS = _MPES_OUTPUTS, None
    if request is None:
        return
    globs, max_bytes, max_files, max_path_bytes, max_depth = request
    try:
        root = os.open(_MPES_WORK, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        _mpes_send(_MPES_NOTE, f"output_files: the work dir cannot be read ({e.strerror})")
        return
    try:
        try:
            found, unmatched, aside = _mpes_match_outputs(root, globs, max_depth)
        except (OSError, RecursionError) as e:  # (each directory's own errors are in `aside`)
            _mpes_send(_MPES_NOTE, f"output_files: the work dir could not be searched ({e})"[:1000])
            return
        refused, left_out = [], []
        sent_bytes = sent = 0
        for path in sorted(found):
            kind = found[path]
            name = path.encode("utf-8", "surrogateescape")
            shown = _mpes_shown(path)
            if kind != "file":
                refused.append(f"{shown} ({'a symlink, never followed' if kind == 'symlink' else 'not a regular file'})")
                continue
            if len(name) > max_path_bytes:
                refused.append(f"{_mpes_shown(path[:100])}... (its path is longer than {max_path_bytes} bytes)")
                continue
            if sent >= max_files:
                left_out.append(shown)
                continue
            try:
                data = _mpes_read_beneath(root, path, max_bytes - sent_bytes)
            except OSError as e:
                refused.append(f"{shown} ({e.strerror})")
                continue
            if data is None:
                refused.append(f"{shown} (not a regular file)")
                continue
            if sent_bytes + len(data) > max_bytes:
                left_out.append(shown)
                continue
            if not _mpes_send(_MPES_FILE_FRAME, len(name).to_bytes(4, "little") + name + data):
                return
            sent += 1
            sent_bytes += len(data)
    finally:
        os.close(root)
    if unmatched:
        _mpes_send(_MPES_NOTE, ("output_files: nothing matched " + ", ".join(repr(g) for g in unmatched))[:1000])
    if refused:
        _mpes_send(_MPES_NOTE, ("output_files: refused " + "; ".join(refused))[:1000])
    if left_out:
        _mpes_send(_MPES_NOTE, (f"output_files: {len(left_out)} file(s) left out (over --max-output-file-bytes "
                                f"{max_bytes} or {max_files} files): " + ", ".join(left_out))[:1000])
    if aside["cut"]:
        _mpes_send(_MPES_NOTE, f"output_files: the work dir has more than {_MPES_MAX_WALK} entries; "
                               "only the first were matched")
    if aside["deep"]:
        _mpes_send(_MPES_NOTE, f"output_files: directories more than {max_depth} levels deep were not "
                               "searched (a path deeper than that cannot come back)")
    if aside["unreadable"]:
        _mpes_send(_MPES_NOTE, ("output_files: could not list " + "; ".join(aside["unreadable"]))[:1000])
