"""Measurements taken against the server under test, over its real stdio MCP connection."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Optional

from harness import memory
from harness.client import (HarnessError, McpServer, RequestTimeout, Response, ServerExited,
                            tool_outcome)
from harness.stats import summarize_ns
from harness.workloads import HELLO, Workload

# A workload whose first calls all fail the same way is given up on instead of repeated.
_GIVE_UP_AFTER = 3
# Fewest measured calls before a time budget may end a workload.
MIN_SAMPLES = 3


@dataclass
class ServerLauncher:
    """Starts fresh server processes, each logging its stderr into the results directory."""

    argv: list[str]
    env: dict[str, str]
    log_dir: str
    _count: int = field(default=0)

    def start(self, label: str) -> tuple[McpServer, Response]:
        self._count += 1
        log = os.path.join(self.log_dir, f"server-{self._count:02d}-{label}.stderr.log")
        server = McpServer(self.argv, self.env, log)
        try:
            return server, server.initialize()
        except HarnessError:
            server.close(timeout=2)
            raise


class Session:
    """The long-lived server the warm workloads run on; replaced if it dies."""

    def __init__(self, launcher: ServerLauncher):
        self.launcher = launcher
        self.restarts = 0
        self.server, self.init_response = launcher.start("main")

    def replace(self) -> None:
        self.server.close(timeout=2)
        self.restarts += 1
        self.server, self.init_response = self.launcher.start(f"restart{self.restarts}")

    def close(self):
        return self.server.close()


def execute_args(workload: Workload) -> dict:
    return {"script": workload.script, "dependencies": list(workload.dependencies),
            "timeout_seconds": workload.timeout_seconds}


def _outcome_error(workload: Workload, resp: Response) -> tuple[Optional[str], dict]:
    out = tool_outcome(resp)
    if out["is_error"]:
        return f"server error: {out['text'][:500]}", out
    return workload.check(out["stdout"], out["stderr"], out["exit_code"]), out


def _call(session: Session, workload: Workload) -> tuple[Optional[Response], Optional[str], dict]:
    try:
        resp = session.server.call_tool("execute_python", execute_args(workload),
                                        timeout=workload.timeout_seconds + 30)
    except RequestTimeout as e:
        return None, str(e), {}
    except ServerExited as e:
        session.replace()
        return None, f"server died during the call: {e}", {}
    err, out = _outcome_error(workload, resp)
    return resp, err, out


def _run_facts(out: dict) -> dict:
    sc = out.get("structured") or {}
    return {k: sc[k] for k in ("sandbox", "python_version", "execution_path") if k in sc}


class ServerSeries:
    """The measured calls of one workload on the server, one request at a time, taken in as
    many slices as the caller likes (so baselines can run in between, under the same load).
    Past `budget_s` seconds of measuring (with at least MIN_SAMPLES samples) it stops, so a slow
    server or workload cannot stretch the run without bound."""

    def __init__(self, session: Session, workload: Workload, target: int,
                 budget_s: float = math.inf):
        self.session = session
        self.workload = workload
        self.target = target
        self.budget_s = budget_s
        self.samples: list[int] = []
        self.reported: list[int] = []  # the server's own duration_ms: the run without the protocol
        self.errors: list[str] = []
        self.ok_calls = 0
        self.facts: dict = {}
        self.given_up = False
        self.cut_short = False
        self._measuring_s = 0.0
        self._attempts = 0  # measured calls, failed ones included

    @property
    def done(self) -> bool:
        return self.given_up or self.cut_short or len(self.samples) >= self.target

    def _one(self, measured: bool) -> None:
        resp, err, out = _call(self.session, self.workload)
        if err is not None:
            self.errors.append(err)
            if (len(self.errors) >= _GIVE_UP_AFTER and not self.ok_calls
                    and len(set(self.errors)) == 1):
                self.given_up = True
            return
        self.ok_calls += 1
        if not self.facts:
            self.facts = _run_facts(out)
        if measured and resp is not None:
            self.samples.append(resp.latency_ns)
            duration = (out.get("structured") or {}).get("duration_ms")
            if isinstance(duration, (int, float)):
                self.reported.append(int(duration * 1e6))

    def warm(self, calls: int) -> None:
        """Unmeasured calls. The first may build an environment; the rest are cut short when
        they eat half the budget."""
        t0 = time.monotonic()
        for i in range(calls):
            if self.given_up or (i > 0 and time.monotonic() - t0 > self.budget_s / 2):
                return
            self._one(False)

    def measure(self, calls: int) -> None:
        for _ in range(calls):
            if self.done:
                return
            if self._measuring_s > self.budget_s and self._attempts >= MIN_SAMPLES:
                self.cut_short = True
                return
            t0 = time.monotonic()
            self._one(True)
            self._attempts += 1
            self._measuring_s += time.monotonic() - t0
            if self.workload.pause_s:
                time.sleep(self.workload.pause_s)

    def result(self) -> dict:
        errors = self.errors + ([f"gave up after {len(self.errors)} identical failures"]
                                if self.given_up else [])
        return {"latency_ms": summarize_ns(self.samples),
                "samples_ms": [s / 1e6 for s in self.samples],
                "server_reported_ms": summarize_ns(self.reported),
                "cut_short_by_budget": self.cut_short, "errors": len(self.errors),
                "first_error": errors[0] if errors else None, "run": self.facts}


def run_sequential(session: Session, workload: Workload, warmup: int, iterations: int,
                   budget_s: float = math.inf) -> dict:
    """`warmup` unmeasured calls, then up to `iterations` measured ones in one go."""
    series = ServerSeries(session, workload, iterations, budget_s)
    series.warm(warmup)
    series.measure(iterations)
    return series.result()


def run_concurrent(session: Session, workload: Workload, in_flight: int, total: int,
                   budget_s: float = math.inf) -> dict:
    """`total` requests on the one connection with `in_flight` outstanding at any time; no new
    ones after `budget_s` seconds once 2 × in_flight have completed."""
    server = session.server
    samples: list[int] = []
    errors: list[str] = []
    deadline = time.monotonic() + workload.timeout_seconds + 60 + total
    sent = 0
    done = 0
    t0 = time.perf_counter_ns()
    t_last = t0
    try:
        while sent < min(in_flight, total):
            server.send_request("tools/call", {"name": "execute_python",
                                               "arguments": execute_args(workload)})
            sent += 1
        while done < total:
            left = deadline - time.monotonic()
            if left <= 0:
                errors.append(f"{total - done} of {total} requests unanswered at the deadline")
                break
            for rid in server.pump(left):
                resp = server.take(rid)
                if resp is None:
                    continue
                done += 1
                t_last = resp.received_ns
                err, _ = _outcome_error(workload, resp)
                if err is None:
                    samples.append(resp.latency_ns)
                else:
                    errors.append(err)
                over_budget = (time.perf_counter_ns() - t0) / 1e9 > budget_s and done >= 2 * in_flight
                if over_budget and total > sent:
                    total = sent  # stop here: wait only for what is in flight
                if sent < total:
                    server.send_request("tools/call", {"name": "execute_python",
                                                       "arguments": execute_args(workload)})
                    sent += 1
    except ServerExited as e:
        errors.append(f"server died during the batch: {e}")
        session.replace()
    seconds = (t_last - t0) / 1e9
    ok = len(samples)
    return {"in_flight": in_flight, "requests": total, "completed": ok,
            "seconds": seconds, "runs_per_s": ok / seconds if ok and seconds > 0 else None,
            "latency_ms": summarize_ns(samples), "samples_ms": [s / 1e6 for s in samples],
            "errors": len(errors), "first_error": errors[0] if errors else None}


def cold_start(launcher: ServerLauncher, index: int) -> dict:
    """A fresh process: spawn → initialize answered, and spawn → first hello result."""
    server, init = launcher.start(f"cold{index}")
    out: dict = {"initialize_ms": (init.received_ns - server.start_ns) / 1e6}
    try:
        resp = server.call_tool("execute_python", execute_args(HELLO),
                                timeout=HELLO.timeout_seconds + 30)
        err, _ = _outcome_error(HELLO, resp)
        out["first_result_ms"] = (resp.received_ns - server.start_ns) / 1e6
        out["error"] = err
    except (RequestTimeout, ServerExited) as e:
        out["first_result_ms"] = None
        out["error"] = str(e)
    exit_info = server.close()
    out["shutdown_s"] = exit_info.seconds_to_exit
    out["exit_status"] = exit_info.status
    out["killed"] = exit_info.killed
    return out


def measure_concurrent_memory(session: Session, sleeper: Workload, runs: int,
                              settle_timeout: float) -> dict:
    """Memory of the server tree idle, then with `runs` sleeping runs in flight."""
    server = session.server
    pid = server.proc.pid
    idle = memory.tree_memory(pid)
    ids = [server.send_request("tools/call", {"name": "execute_python",
                                              "arguments": execute_args(sleeper)})
           for _ in range(runs)]
    busy = memory.wait_for_branches(pid, idle, runs, settle_timeout)
    errors: list[str] = []
    for rid in ids:
        try:
            resp = server.wait_for(rid, sleeper.timeout_seconds + 30)
            err, _ = _outcome_error(sleeper, resp)
            if err:
                errors.append(err)
        except RequestTimeout as e:
            errors.append(str(e))
        except ServerExited as e:
            errors.append(f"server died: {e}")
            session.replace()
            break
    # Divide by the runs really alive at the measurement (a server may queue some).
    alive = busy["branches_seen"]
    extra_pss = extra_rss = None
    if alive > 0:
        extra_rss = (busy["total_rss_kb"] - idle["total_rss_kb"]) / alive
        if idle["total_pss_kb"] is not None and busy["total_pss_kb"] is not None:
            extra_pss = (busy["total_pss_kb"] - idle["total_pss_kb"]) / alive
    else:
        errors.append(f"none of the {runs} sleeping runs showed up as a process under the server")
    return {"runs_in_flight": runs, "runs_alive": alive, "idle": idle, "busy": busy,
            "processes_added": busy["count"] - idle["count"],
            "extra_pss_kb_per_run": extra_pss,
            "extra_rss_kb_per_run": extra_rss,
            "errors": len(errors), "first_error": errors[0] if errors else None}


def check_environment(session: Session) -> dict:
    """The server's own description of its interpreter and sandbox (text and structured)."""
    try:
        resp = session.server.call_tool("check_environment", {}, timeout=60)
    except (RequestTimeout, ServerExited) as e:
        return {"error": str(e)}
    if resp.error is not None:
        return {"error": f"JSON-RPC error {resp.error.get('code')}: {resp.error.get('message')}"}
    res = resp.result or {}
    text = "\n".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")
    return {"text": text, "structured": res.get("structuredContent"),
            "is_error": bool(res.get("isError"))}

