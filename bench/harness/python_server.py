"""The real anchor: the Python server this project replaces (mcp-python-exec-sandbox 0.1.8 from
PyPI, installed by scripts/install-deps.sh into .tools/python-server), as it really runs: one
long-lived MCP server that starts `uv run --script` per call.

Its user trusts the index's CA through uv's own configuration (it passes uv only PATH, HOME,
LANG, LC_ALL, TERM, TMPDIR and USER), so it gets a HOME of its own with `system-certs = true` in
~/.config/uv/uv.toml and an empty uv cache there (its first pandas call downloads). It runs with
`--sandbox-backend none`: its native sandbox mounts only /usr, /lib, /bin, /sbin and /etc/ssl,
so it cannot start the project's uv nor pyenv's CPython 3.13 (the comparison is then in its
favour)."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Optional

from harness import server_runs

KEY = "pyserver"
TITLE = "Python server 0.1.8 (uv run per call)"


class PythonServer:
    def __init__(self, venv: str, uv_path: str, log_dir: str, env: dict[str, str],
                 extra_args: list[str]):
        self.venv = venv
        self.reason = ""
        self.session: Optional[server_runs.Session] = None
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        program = os.path.join(venv, "bin", "mcp-python-exec-sandbox")
        uv = shutil.which(uv_path) or shutil.which(uv_path, path=os.path.join(
            os.path.dirname(os.path.dirname(venv)), ".tools", "venv", "bin"))
        if not os.access(program, os.X_OK):
            self.reason = f"not installed at {venv} (scripts/install-deps.sh)"
            return
        if uv is None:
            self.reason = f"uv not found ({uv_path!r})"
            return
        try:
            with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as f:
                home = next(line.split("=", 1)[1].strip() for line in f if line.startswith("home"))
        except (OSError, StopIteration):
            self.reason = f"{venv}/pyvenv.cfg names no base interpreter"
            return
        self._tmp = tempfile.TemporaryDirectory(prefix="mpes-bench-pyserver-")
        root = self._tmp.name
        os.makedirs(os.path.join(root, "home", ".config", "uv"))
        os.makedirs(os.path.join(root, "home", ".cache", "uv"))
        with open(os.path.join(root, "home", ".config", "uv", "uv.toml"), "w", encoding="utf-8") as f:
            f.write("system-certs = true\n")
        # uv alone on PATH (its tools environment's bin/ also has a python), then CPython 3.13.
        os.makedirs(os.path.join(root, "bin"))
        os.symlink(uv, os.path.join(root, "bin", "uv"))
        run_env = dict(env)
        run_env["HOME"] = os.path.join(root, "home")
        run_env["PATH"] = ":".join([os.path.join(root, "bin"), home, env.get("PATH", "/usr/bin:/bin")])
        self.launcher = server_runs.ServerLauncher(
            [program, "--no-warm-cache", "--sandbox-backend", "none", *extra_args], run_env, log_dir)

    @property
    def available(self) -> bool:
        return not self.reason

    def start(self) -> None:
        self.session = server_runs.Session(self.launcher)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def baseline_entry(self) -> dict:
        return {"key": KEY, "title": TITLE, "available": self.available,
                "unavailable_reason": self.reason, "version": "0.1.8"}
