"""The ``mcp-python-exec-sandbox`` command: replaces this Python process with the server binary.

``os.execv`` keeps the process (its pid and its stdin/stdout, which carry MCP), so no Python stays
between the client and the server. The server finds its zygote binary next to itself, in ``bin/``.
"""
import os
import signal
import sys

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "mcp-python-exec-sandbox")


def main() -> None:
    # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec. Give the
    # server the dispositions it gets when started directly.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(SERVER, [SERVER, *sys.argv[1:]])
    except OSError as e:
        sys.stderr.write(
            f"mcp-python-exec-sandbox: cannot start the server binary {SERVER}: {e.strerror}; "
            "reinstall the package (this wheel is for Linux x86_64 with glibc 2.34 or later)\n"
        )
        sys.exit(127)
