"""A minimal MCP client over stdio, built for timing.

One JSON-RPC message per line in both directions. Single-threaded on purpose: requests are written
and responses read by the same thread (non-blocking pipe + selector), so no thread hand-off sits
inside a measured round trip. Each request's latency runs from just before its line is written to
just after its response line is parsed.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Optional

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "mpes-bench", "version": "1.0.0"}


class HarnessError(Exception):
    """The harness cannot go on: the server did not start, or broke the protocol."""


class ServerExited(Exception):
    """The server's stdout closed (it exited or crashed) while requests were outstanding."""


class RequestTimeout(Exception):
    """A request got no response within the harness's deadline."""


@dataclass
class Response:
    id: int
    method: str
    message: dict
    sent_ns: int
    received_ns: int

    @property
    def latency_ns(self) -> int:
        return self.received_ns - self.sent_ns

    @property
    def result(self) -> Optional[dict]:
        return self.message.get("result")

    @property
    def error(self) -> Optional[dict]:
        return self.message.get("error")


@dataclass
class _Pending:
    method: str
    sent_ns: int


@dataclass
class ServerExit:
    status: Optional[int]     # None when it had to be killed
    seconds_to_exit: float    # from stdin close to process exit
    killed: bool


@dataclass
class McpServer:
    """A server process spawned by the harness and spoken to over its stdin/stdout."""

    argv: list[str]
    env: dict[str, str]
    stderr_path: str
    proc: subprocess.Popen = field(init=False)
    start_ns: int = field(init=False)
    notifications: dict[str, int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0
        self._pending: dict[int, _Pending] = {}
        self._done: dict[int, Response] = {}
        self._next_id = 1
        self._eof = False
        self._exit: Optional[ServerExit] = None
        self._stderr_file = open(self.stderr_path, "wb")
        self.start_ns = time.perf_counter_ns()
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr_file, env=self.env, close_fds=True)
        except OSError as e:
            self._stderr_file.close()
            raise HarnessError(f"cannot start the server {self.argv[0]}: {e}") from e
        self._out_fd = self.proc.stdout.fileno()
        self._in_fd = self.proc.stdin.fileno()
        os.set_blocking(self._out_fd, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out_fd, selectors.EVENT_READ)

    # ---- lifecycle -------------------------------------------------------------------------

    def initialize(self, timeout: float = 30.0) -> Response:
        """initialize + notifications/initialized. Any failure here means the harness cannot run."""
        try:
            rid = self.send_request("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO})
            resp = self.wait_for(rid, timeout)
        except (ServerExited, RequestTimeout) as e:
            raise HarnessError(f"the server did not answer initialize: {e}{self.stderr_tail()}") from e
        res = resp.result
        if not isinstance(res, dict) or "protocolVersion" not in res or "serverInfo" not in res:
            raise HarnessError(f"initialize answered without protocolVersion/serverInfo: "
                               f"{json.dumps(resp.message)[:500]}")
        self.send_notification("notifications/initialized")
        return resp

    def close(self, timeout: float = 10.0) -> ServerExit:
        """Closes stdin (the MCP way to stop a stdio server) and reaps the process."""
        if self._exit is not None:
            return self._exit
        t0 = time.perf_counter()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        killed = False
        try:
            status: Optional[int] = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status, killed = None, True
        elapsed = time.perf_counter() - t0
        self._sel.close()
        self.proc.stdout.close()
        self._stderr_file.close()
        self._exit = ServerExit(status, elapsed, killed)
        return self._exit

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            if not self._stderr_file.closed:
                self._stderr_file.flush()
            with open(self.stderr_path, "rb") as f:
                data = f.read()
        except OSError:
            return ""
        if not data:
            return ""
        text = data[-limit:].decode("utf-8", "replace")
        return f"\n--- server stderr (tail) ---\n{text}"

    # ---- messages --------------------------------------------------------------------------

    def send_request(self, method: str, params: Optional[dict] = None) -> int:
        rid = self._next_id
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        line = _encode(msg)
        sent = time.perf_counter_ns()
        self._pending[rid] = _Pending(method, sent)
        self._write(line)
        return rid

    def send_notification(self, method: str, params: Optional[dict] = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(_encode(msg))

    def call_tool(self, name: str, arguments: dict, timeout: float) -> Response:
        rid = self.send_request("tools/call", {"name": name, "arguments": arguments})
        return self.wait_for(rid, timeout)

    def wait_for(self, rid: int, timeout: float) -> Response:
        deadline = time.monotonic() + timeout
        while rid not in self._done:
            left = deadline - time.monotonic()
            if left <= 0:
                self._pending.pop(rid, None)  # a late answer is dropped
                raise RequestTimeout(f"no response to request {rid} within {timeout:.0f} s")
            self.pump(left)
        return self._done.pop(rid)

    def take(self, rid: int) -> Optional[Response]:
        """The response to `rid` if it has arrived (removing it), else None."""
        return self._done.pop(rid, None)

    def abandon(self, rid: int) -> None:
        self._pending.pop(rid, None)
        self._done.pop(rid, None)

    def pump(self, timeout: float) -> list[int]:
        """Waits up to `timeout` s for output, parses every complete line; returns ids answered."""
        if self._eof:
            raise ServerExited(self._exit_text())
        answered: list[int] = []
        if not self._sel.select(timeout):
            return answered
        while True:
            try:
                chunk = os.read(self._out_fd, 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                self._eof = True
                break
            self._buf += chunk
        start = 0
        scan = self._scanned  # bytes already known to hold no newline: a long line is not rescanned
        while True:
            nl = self._buf.find(b"\n", scan)
            if nl < 0:
                break
            line = bytes(self._buf[start:nl])
            start = scan = nl + 1
            rid = self._handle_line(line)
            if rid is not None:
                answered.append(rid)
        del self._buf[:start]
        self._scanned = len(self._buf)
        if self._eof and not answered:
            raise ServerExited(self._exit_text())
        return answered

    # ---- internals -------------------------------------------------------------------------

    def _handle_line(self, line: bytes) -> Optional[int]:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return None
        try:
            msg = json.loads(line)
        except ValueError as e:
            raise HarnessError(f"the server wrote a line to stdout that is not JSON ({e}): "
                               f"{line[:300]!r}") from e
        # Parsing is part of the round trip: stamp after it (1 MB results take a while).
        parsed_ns = time.perf_counter_ns()
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            raise HarnessError(f"the server wrote a message that is not JSON-RPC 2.0: {line[:300]!r}")
        if "method" in msg:
            if "id" in msg:  # a request from the server (ping, or something we do not offer)
                if msg["method"] == "ping":
                    self._write(_encode({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
                else:
                    self._write(_encode({"jsonrpc": "2.0", "id": msg["id"], "error": {
                        "code": -32601, "message": "the benchmark client offers no methods"}}))
            else:
                name = str(msg["method"])
                self.notifications[name] = self.notifications.get(name, 0) + 1
            return None
        if "id" not in msg or ("result" not in msg and "error" not in msg):
            raise HarnessError(f"the server wrote a response without id/result/error: {line[:300]!r}")
        rid = msg["id"]
        pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is None:
            return None  # an answer to a request given up on, or a stray id: ignore
        self._done[rid] = Response(rid, pending.method, msg, pending.sent_ns, parsed_ns)
        return rid

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._in_fd, view)
            except BrokenPipeError as e:
                raise ServerExited(self._exit_text()) from e
            view = view[n:]

    def _exit_text(self) -> str:
        try:
            status = self.proc.wait(timeout=2)
            what = f"the server exited with status {status}"
        except subprocess.TimeoutExpired:
            what = "the server closed its stdout"
        return what + self.stderr_tail()


def _encode(msg: dict) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def tool_outcome(resp: Response) -> dict:
    """stdout, stderr, exit_code, is_error, text and structured content of a tools/call response."""
    if resp.error is not None:
        err = resp.error
        return {"is_error": True, "text": f"JSON-RPC error {err.get('code')}: {err.get('message')}",
                "stdout": "", "stderr": "", "exit_code": None, "structured": None}
    res = resp.result or {}
    text = "\n".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")
    sc = res.get("structuredContent")
    if isinstance(sc, dict) and "exit_code" in sc:
        stdout, stderr, code = sc.get("stdout", ""), sc.get("stderr", ""), sc.get("exit_code")
    else:
        stdout, stderr, code = _parse_result_text(text)
    return {"is_error": bool(res.get("isError")), "text": text, "stdout": stdout or "",
            "stderr": stderr or "", "exit_code": code, "structured": sc}


def _parse_result_text(text: str) -> tuple[str, str, Optional[int]]:
    """The Python server's text format: `--- stdout ---\\n...`, `--- stderr ---\\n...`,
    `--- exit_code: N ---`. Used when a result has no structuredContent."""
    stdout = stderr = ""
    code: Optional[int] = None
    section: Optional[str] = None
    lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
    for line in text.split("\n"):
        if line == "--- stdout ---":
            section = "stdout"
        elif line == "--- stderr ---":
            section = "stderr"
        elif line.startswith("--- ") and line.endswith(" ---"):
            section = None
            if line.startswith("--- exit_code: "):
                try:
                    code = int(line[len("--- exit_code: "):-4])
                except ValueError:
                    pass
        elif section is not None:
            lines[section].append(line)
    stdout = "\n".join(lines["stdout"])
    stderr = "\n".join(lines["stderr"])
    return stdout, stderr, code
