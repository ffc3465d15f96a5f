"""The server on its Streamable HTTP transport: hello latency and throughput with the stateless
2026-07-28 era (one POST per call, JSON answers, keep-alive connections), from one server and from
three replicas behind HAProxy (Debian's haproxy, round robin), for comparison with stdio.

Latency runs from the request written to the response parsed, one connection, one call at a time.
Throughput uses one connection per request in flight, each on its own thread (the rate, not the
single round trip, is what is measured there).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional

from harness.client import HarnessError, Response, tool_outcome
from harness.stats import summarize_ns
from harness.workloads import Workload

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mpes-bench", "version": "1.0.0"}}
LISTENING = re.compile(r"listening on http://\S*?:(\d+)/mcp")
REPLICAS = 3


class HttpServer:
    """One server process on --transport http --port 0, its port read from its log."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: str, timeout: float = 30.0):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv + ["--transport", "http", "--port", "0"], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._log, close_fds=True)
        deadline = time.monotonic() + timeout
        self.port = 0
        while not self.port:
            with open(log_path, "r", encoding="utf-8", errors="replace") as f:
                m = LISTENING.search(f.read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise HarnessError(f"the HTTP server did not start listening; see {log_path}")
            else:
                time.sleep(0.02)

    def stop(self) -> Optional[int]:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


class Connection:
    """Keep-alive HTTP/1.1 to the MCP endpoint; one stateless tools/call at a time."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.next_id = 1

    def call(self, workload: Workload) -> Response:
        rid = self.next_id
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
            "name": "execute_python", "arguments": {"script": workload.script,
                                                    "dependencies": list(workload.dependencies),
                                                    "timeout_seconds": workload.timeout_seconds},
            "_meta": META}}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                   "Mcp-Name": "execute_python"}
        sent = time.perf_counter_ns()
        try:
            self.conn.request("POST", "/mcp", body, headers)
            reply = self.conn.getresponse()
            data = reply.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # reconnects on the next request
            raise
        received = time.perf_counter_ns()
        try:
            message = json.loads(data)
        except ValueError:
            message = {"error": {"code": reply.status, "message": data[:300].decode("utf-8", "replace")}}
        return Response(rid, "tools/call", message, sent, received)

    def close(self) -> None:
        self.conn.close()


def _error_of(workload: Workload, resp: Response) -> Optional[str]:
    out = tool_outcome(resp)
    if out["is_error"]:
        return f"server error: {out['text'][:500]}"
    return workload.check(out["stdout"], out["stderr"], out["exit_code"])


def sequential(port: int, workload: Workload, warmup: int, iterations: int, budget_s: float) -> dict:
    conn = Connection(port)
    samples: list[int] = []
    errors: list[str] = []
    try:
        for _ in range(warmup):
            conn.call(workload)
        t0 = time.monotonic()
        for i in range(iterations):
            if i >= 3 and time.monotonic() - t0 > budget_s:
                break
            try:
                resp = conn.call(workload)
            except (OSError, http.client.HTTPException) as e:
                errors.append(f"connection failed: {e}")
                continue
            err = _error_of(workload, resp)
            if err:
                errors.append(err)
            else:
                samples.append(resp.latency_ns)
    finally:
        conn.close()
    return {"latency_ms": summarize_ns(samples), "samples_ms": [s / 1e6 for s in samples],
            "errors": len(errors), "first_error": errors[0] if errors else None}


def concurrent(port: int, workload: Workload, in_flight: int, total: int, budget_s: float) -> dict:
    samples: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    state = {"next": 0, "total": total, "done": 0}
    t0 = time.perf_counter_ns()
    last = [t0]

    def worker() -> None:
        conn = Connection(port)
        try:
            while True:
                with lock:
                    over = (time.perf_counter_ns() - t0) / 1e9 > budget_s and state["done"] >= 2 * in_flight
                    if over:
                        state["total"] = min(state["total"], state["next"])
                    if state["next"] >= state["total"]:
                        return
                    state["next"] += 1
                try:
                    resp = conn.call(workload)
                    err = _error_of(workload, resp)
                except (OSError, http.client.HTTPException) as e:
                    resp, err = None, f"connection failed: {e}"
                with lock:
                    state["done"] += 1
                    if err:
                        errors.append(err)
                    else:
                        samples.append(resp.latency_ns)
                        last[0] = max(last[0], resp.received_ns)
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = (last[0] - t0) / 1e9
    ok = len(samples)
    return {"in_flight": in_flight, "requests": state["total"], "completed": ok, "seconds": seconds,
            "runs_per_s": ok / seconds if ok and seconds > 0 else None,
            "latency_ms": summarize_ns(samples), "errors": len(errors),
            "first_error": errors[0] if errors else None}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def haproxy_path() -> Optional[str]:
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy",) if os.access(p, os.X_OK)), None)


@contextmanager
def balancer(ports: list[int], log_dir: str) -> Iterator[int]:
    """HAProxy in front of `ports`, round robin with health checks; yields its port."""
    exe = haproxy_path()
    if exe is None:
        raise HarnessError("haproxy not found")
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="mpes-bench-lb-") as tmp:
        cfg = os.path.join(tmp, "haproxy.cfg")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write("\n".join([
                "global", "  maxconn 1000",
                "defaults", "  mode http", "  timeout connect 2s", "  timeout client 120s",
                "  timeout server 120s", "  option http-keep-alive",
                "frontend mcp", f"  bind 127.0.0.1:{port}", "  default_backend replicas",
                "backend replicas", "  balance roundrobin", "  option httpchk",
                "  http-check send meth GET uri /healthz hdr Host localhost",
                *[f"  server r{i} 127.0.0.1:{p} check inter 1s" for i, p in enumerate(ports)],
            ]) + "\n")
        with open(os.path.join(log_dir, "haproxy.log"), "wb") as log:
            proc = subprocess.Popen([exe, "-db", "-f", cfg], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, close_fds=True)
            try:
                deadline = time.monotonic() + 10
                while True:
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                        c.request("GET", "/healthz", headers={"Host": "localhost"})
                        if c.getresponse().status == 200:
                            c.close()
                            break
                        c.close()
                    except OSError:
                        pass
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise HarnessError("haproxy did not come up; see haproxy.log")
                    time.sleep(0.05)
                yield port
            finally:
                proc.terminate()
                proc.wait(timeout=10)


def measure(argv: list[str], env: dict[str, str], log_dir: str, hello: Workload, warmup: int,
            iterations: int, throughput_requests: int, levels: tuple[int, ...],
            budget_s: float) -> dict:
    """hello over HTTP on one server, then through HAProxy over three replicas."""
    out: dict = {"direct": {}, "balanced": {}}
    server = HttpServer(argv, env, os.path.join(log_dir, "http-direct.stderr.log"))
    try:
        out["direct"]["hello"] = sequential(server.port, hello, warmup, iterations, budget_s)
        out["direct"]["throughput"] = {
            str(n): concurrent(server.port, hello, n, max(throughput_requests, n), budget_s)
            for n in levels}
    finally:
        out["direct"]["exit_status"] = server.stop()
    if haproxy_path() is None:
        out["balanced"] = {"skipped": "haproxy not installed (scripts/install-deps.sh installs it)"}
        return out
    replicas = [HttpServer(argv, env, os.path.join(log_dir, f"http-replica{i}.stderr.log"))
                for i in range(REPLICAS)]
    try:
        for r in replicas:  # every replica warm before the balancer spreads calls over them
            sequential(r.port, hello, max(1, warmup), 0, math.inf)
        with balancer([r.port for r in replicas], log_dir) as port:
            out["balanced"] = {"replicas": REPLICAS,
                               "hello": sequential(port, hello, warmup, iterations, budget_s),
                               "throughput": {str(n): concurrent(port, hello, n,
                                                                 max(throughput_requests, n), budget_s)
                                              for n in levels}}
    finally:
        for r in replicas:
            r.stop()
    return out
