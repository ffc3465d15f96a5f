"""bench/run.sh: measures the server against the per-call architecture it replaces, in one run.

Exit status: 0 when the harness ran (whatever the numbers, and even when workloads failed: those
are recorded in the report); 1 when the harness itself could not work (server missing or not
starting, malformed JSON on its stdout); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
import unittest
from dataclasses import dataclass

from harness import baselines as bl
from harness import http_runs, machine, memory, report, server_runs
from harness.client import HarnessError
from harness.stats import summarize_ns
from harness.workloads import HELLO, PANDAS, PANDAS_UNDECLARED, SEQUENTIAL, sleeper

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONCURRENCY_LEVELS = (4, 16)
# Large enough that 1 MiB of output comes back whole, so the client really receives it.
DEFAULT_SERVER_ARGS = ["--max-output-bytes", str(2 << 20)]


@dataclass
class Plan:
    warmup: int
    server_iterations: int
    baseline_iterations: int
    throughput_requests: int
    baseline_throughput_requests: int
    cold_starts: int
    memory_runs: int
    sleep_seconds: float
    budget_s: float  # per workload and system: measuring stops early past it (min 3 calls)
    rounds: int      # slices in which the server and the baselines take turns on a workload


def _plan(args: argparse.Namespace) -> Plan:
    cores = os.cpu_count() or 1
    if args.quick:
        plan = Plan(warmup=2, server_iterations=10, baseline_iterations=3, throughput_requests=32,
                    baseline_throughput_requests=8, cold_starts=2, memory_runs=2, sleep_seconds=1.5,
                    budget_s=3.0, rounds=2)
    else:
        plan = Plan(warmup=20, server_iterations=300, baseline_iterations=40,
                    throughput_requests=1000, baseline_throughput_requests=64, cold_starts=10,
                    memory_runs=max(2, min(8, 2 * cores)), sleep_seconds=3.0, budget_s=60.0,
                    rounds=10)
    if args.warmup is not None:
        plan.warmup = args.warmup
    if args.iterations is not None:
        plan.server_iterations = args.iterations
    if args.baseline_iterations is not None:
        plan.baseline_iterations = args.baseline_iterations
    if args.cold_starts is not None:
        plan.cold_starts = args.cold_starts
    if args.budget is not None:
        plan.budget_s = args.budget
    return plan


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.sh",
        description="Benchmark the MCP server over stdio against fresh bwrap+python, python and "
                    "uv processes per call, and over Streamable HTTP (one server, and three behind "
                    "HAProxy); writes results.md, results.json and latency.svg.")
    p.add_argument("--quick", action="store_true",
                   help="few iterations: a smoke test that the harness works end to end")
    p.add_argument("--server", default=os.path.join(REPO_ROOT, "build", "mcp-python-exec-sandbox"),
                   help="server binary (default: build/mcp-python-exec-sandbox)")
    p.add_argument("--out", default=os.path.join(REPO_ROOT, "bench", "results"),
                   help="output directory (default: bench/results)")
    p.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the server (repeatable), e.g. --server-arg=--preload=json")
    p.add_argument("--iterations", type=int, help="measured calls per workload on the server")
    p.add_argument("--baseline-iterations", type=int, help="measured calls per workload per baseline")
    p.add_argument("--warmup", type=int, help="unmeasured calls before each server workload")
    p.add_argument("--cold-starts", type=int, help="fresh server processes for the start-up numbers")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="time per workload and system after which measuring stops early "
                        "(at least 3 calls; default 60, --quick 3)")
    p.add_argument("--no-baselines", action="store_true", help="measure the server only")
    p.add_argument("--uv-path", default="uv", help="uv for the `uv run --script` baseline")
    p.add_argument("--self-test", action="store_true",
                   help="run only the harness's own unit tests (--quick runs them first too)")
    args = p.parse_args(argv)
    for name in ("iterations", "baseline_iterations", "cold_starts"):
        v = getattr(args, name)
        if v is not None and v < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.budget is not None and args.budget <= 0:
        p.error("--budget must be positive")
    if args.warmup is not None and args.warmup < 0:
        p.error("--warmup must be at least 0")
    return args


def say(text: str) -> None:
    print(text, flush=True)


def _lat(summary) -> str:
    if not summary:
        return "no successful runs"
    return f"p50 {summary['p50']:.2f} ms, p90 {summary['p90']:.2f} ms, n={summary['n']}"


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run(args: argparse.Namespace) -> int:
    plan = _plan(args)
    server_path = os.path.abspath(args.server)
    if not os.path.isfile(server_path) or not os.access(server_path, os.X_OK):
        raise HarnessError(f"no server binary at {server_path}: build it with scripts/build.sh "
                           f"or pass --server PATH")
    out_dir = os.path.abspath(args.out)
    log_dir = os.path.join(out_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    for name in os.listdir(log_dir):  # logs of an earlier run would be mistaken for this one's
        if name.endswith(".stderr.log"):
            os.unlink(os.path.join(log_dir, name))
    server_args = DEFAULT_SERVER_ARGS + list(args.server_arg)

    results: dict = {
        "harness_version": 1,
        "quick": args.quick,
        "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": machine.describe(REPO_ROOT),
        "iterations": {"warmup": plan.warmup, "server": plan.server_iterations,
                       "baseline": plan.baseline_iterations, "budget_s": plan.budget_s},
        "server": {"path": server_path, "extra_args": server_args},
        "baselines": [],
        "sequential": {w.key: {"title": w.title, "systems": {}} for w in SEQUENTIAL},
        "throughput": {str(n): {} for n in CONCURRENCY_LEVELS},
    }
    say(f"bench: {report.machine_line(results['machine'])}")
    say(f"bench: server {server_path} {' '.join(server_args)}; results in {out_dir}"
        + (" (quick)" if args.quick else ""))

    launcher = server_runs.ServerLauncher([server_path] + server_args, _server_env(), log_dir)

    # Start-up first, while no other server competes for the cores.
    cold = [server_runs.cold_start(launcher, i + 1) for i in range(plan.cold_starts)]
    results["cold_start"] = {
        "runs": cold,
        "initialize_ms": summarize_ns([int(c["initialize_ms"] * 1e6) for c in cold]),
        "first_result_ms": summarize_ns([int(c["first_result_ms"] * 1e6) for c in cold
                                         if c.get("first_result_ms") is not None and not c.get("error")]),
        "shutdown_s": _summary_s([c["shutdown_s"] for c in cold]),
    }
    say(f"bench: initialize after start: {_lat(results['cold_start']['initialize_ms'])}; "
        f"first result: {_lat(results['cold_start']['first_result_ms'])}")

    session = server_runs.Session(launcher)
    init = session.init_response.result or {}
    results["server"]["info"] = init.get("serverInfo")
    results["server"]["protocol_version"] = init.get("protocolVersion")
    results["server"]["check_environment"] = server_runs.check_environment(session)

    # Warm the default zygote, then its idle footprint and the cost of each concurrent run.
    warm = server_runs.run_sequential(session, HELLO, 0, max(1, plan.warmup))
    results["server"]["run"] = warm["run"]
    if warm["first_error"]:
        say(f"bench: WARNING: hello fails on the server: {warm['first_error'][:300]}")
    mem: dict = {"idle": memory.tree_memory(session.server.proc.pid)}
    mem["concurrent"] = server_runs.measure_concurrent_memory(
        session, sleeper(plan.sleep_seconds), plan.memory_runs, settle_timeout=plan.sleep_seconds - 0.3)
    results["memory"] = mem
    say(f"bench: idle tree RSS {mem['idle']['total_rss_kb'] / 1024:.1f} MiB; extra PSS per "
        f"concurrent run: {_kib_text(mem['concurrent']['extra_pss_kb_per_run'])}")

    baselines: list[bl.Baseline] = [] if args.no_baselines else bl.discover(args.uv_path)
    results["baselines"] = [{"key": b.key, "title": b.title, "available": b.available,
                             "unavailable_reason": b.unavailable_reason, "version": b.version}
                            for b in baselines]
    for b in baselines:
        if not b.available:
            say(f"bench: SKIPPED baseline {b.title}: {b.unavailable_reason}")
            for w in SEQUENTIAL:
                results["sequential"][w.key]["systems"][b.key] = {"skipped": b.unavailable_reason}
    usable = [b for b in baselines if b.available]

    with tempfile.TemporaryDirectory(prefix="mpes-bench-") as tmp:
        # World-readable so a sandbox started as another uid can still read the scripts.
        os.chmod(tmp, 0o755)
        files = bl.ScriptFiles(tmp)
        for w in SEQUENTIAL:
            _measure_workload(session, usable, files, w, plan, results)
        for n in CONCURRENCY_LEVELS:
            _measure_throughput(session, usable, files, n, plan, results)

    mem["after_workloads"] = memory.tree_memory(session.server.proc.pid)
    results["server"]["restarts"] = session.restarts
    exit_info = session.close()
    results["server"]["shutdown"] = {"status": exit_info.status, "seconds": exit_info.seconds_to_exit,
                                     "killed": exit_info.killed}

    # The same hello over Streamable HTTP, from one server and through HAProxy over three.
    try:
        # A fresh server: warmed at least as far as its first runs' side work (discovery) goes.
        results["http"] = http_runs.measure([server_path] + server_args, _server_env(), log_dir, HELLO,
                                            max(plan.warmup, 10), plan.server_iterations,
                                            plan.throughput_requests, CONCURRENCY_LEVELS, plan.budget_s)
    except HarnessError as e:
        results["http"] = {"error": str(e)}
        say(f"bench: WARNING: HTTP transport not measured: {e}")
    for where, title in (("direct", "HTTP"), ("balanced", "HAProxy + 3 replicas")):
        part = results["http"].get(where) or {}
        if part.get("skipped"):
            say(f"bench: SKIPPED {title}: {part['skipped']}")
        elif part:
            say(f"bench: hello over {title}: {_lat(part['hello']['latency_ms'])}; "
                + ", ".join(f"{n} in flight {_rps(r)}" for n, r in part["throughput"].items()))

    results["machine"]["load_average_end"] = machine.load_average()
    results["targets"] = report.evaluate_targets(results)
    md = report.to_markdown(results)
    with open(os.path.join(out_dir, "results.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    with open(os.path.join(out_dir, "readme_table.md"), "w", encoding="utf-8") as f:
        f.write(report.to_readme_table(results) + "\n")
    report.write_json(results, os.path.join(out_dir, "results.json"))
    why_no_chart = report.write_chart(results, os.path.join(out_dir, "latency.svg"))
    if why_no_chart:
        say(f"bench: no chart: {why_no_chart}")
    say("")
    say(md)
    report.print_summary(results, say)
    say(f"\nbench: wrote {out_dir}/results.md, readme_table.md, results.json"
        + ("" if why_no_chart else ", latency.svg"))
    return 0


def _errors_text(r: dict) -> str:
    return f"; {r['errors']} errors, first: {r['first_error'][:300]}" if r.get("errors") else ""


def _measure_workload(session: server_runs.Session, baselines: list[bl.Baseline],
                      files: bl.ScriptFiles, w, plan: Plan, results: dict) -> None:
    """The server and every baseline on one workload, interleaved in rounds so that all of them
    are measured under the same load from the rest of the machine."""
    systems = results["sequential"][w.key]["systems"]
    srv = server_runs.ServerSeries(session, w, plan.server_iterations, plan.budget_s)
    srv.warm(plan.warmup)
    fallback = None
    if w is PANDAS and srv.errors and not srv.ok_calls:
        # The server refuses the declared form: measure the same script undeclared instead.
        systems["server"] = srv.result()
        say(f"bench: server {w.title}: no successful runs{_errors_text(systems['server'])}")
        fallback = PANDAS_UNDECLARED
        srv = server_runs.ServerSeries(session, fallback, plan.server_iterations, plan.budget_s)
        srv.warm(plan.warmup)
    n_base = plan.baseline_iterations if w is not PANDAS else max(2, plan.baseline_iterations // 3)
    series = [bl.BaselineSeries(b, w, files, n_base, plan.budget_s) for b in baselines]
    for s in series:
        s.warm()
    for left in range(plan.rounds, 0, -1):
        srv.measure(_slice(srv.target - len(srv.samples), left))
        for s in series:
            s.measure(_slice(s.target - len(s.calls), left))
    srv.measure(srv.target - len(srv.samples))  # what failed calls left short, budget permitting

    r = srv.result()
    if fallback is None:
        systems["server"] = r
    else:
        entry = {"title": fallback.title, "same_as": w.key, "systems": {"server": r}}
        ordered: dict = {}
        for key, value in results["sequential"].items():  # right below the declared form
            ordered[key] = value
            if key == w.key:
                ordered[fallback.key] = entry
        results["sequential"] = ordered
    say(f"bench: server {(fallback or w).title}: {_lat(r['latency_ms'])}{_errors_text(r)}")
    for s in series:
        rb = s.result()
        systems[s.baseline.key] = rb
        if fallback is not None and s.baseline.key != "uv":
            # Identical work for a baseline: `dependencies` only matters to uv.
            results["sequential"][fallback.key]["systems"][s.baseline.key] = rb
        say(f"bench: {s.baseline.title} {w.title}: {_lat(rb['latency_ms'])}{_errors_text(rb)}")


def _slice(remaining: int, rounds_left: int) -> int:
    return max(0, -(-remaining // rounds_left))  # ceil: the last round takes the rest


def _measure_throughput(session: server_runs.Session, baselines: list[bl.Baseline],
                        files: bl.ScriptFiles, level: int, plan: Plan, results: dict) -> None:
    """hello with `level` requests in flight: on the server's one connection, then as `level`
    processes at a time for each baseline, back to back."""
    out = results["throughput"][str(level)]
    r = server_runs.run_concurrent(session, HELLO, level, max(plan.throughput_requests, level),
                                   plan.budget_s)
    out["server"] = r
    say(f"bench: server hello, {level} in flight: {_rps(r)}{_errors_text(r)}")
    for b in baselines:
        total = max(plan.baseline_throughput_requests, level)
        calls, seconds = bl.run_concurrent(b, HELLO, files, level, total, plan.budget_s)
        rb = bl.summarize(calls)
        ok = rb["latency_ms"]["n"] if rb["latency_ms"] else 0
        rb.update({"in_flight": level, "requests": len(calls), "completed": ok, "seconds": seconds,
                   "runs_per_s": ok / seconds if ok and seconds > 0 else None})
        out[b.key] = rb
        say(f"bench: {b.title} hello, {level} in flight: {_rps(rb)}{_errors_text(rb)}")


def _rps(r: dict) -> str:
    return f"{r['runs_per_s']:.0f} runs/s" if r.get("runs_per_s") else "no successful runs"


def _summary_s(values: list[float]):
    s = summarize_ns([int(v * 1e9) for v in values])
    if s is None:
        return None
    return {k: (v / 1000 if k != "n" else v) for k, v in s.items()}


def _kib_text(kb) -> str:
    return "unknown" if kb is None else f"{kb / 1024:.2f} MiB"


def self_test() -> bool:
    """The harness's own unit tests; a failure means the harness is broken."""
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(os.path.join(here, "tests"),
                                                top_level_dir=os.path.dirname(here))
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    return result.wasSuccessful()


def main(argv: list[str]) -> int:
    args = _parse(argv)
    started = time.monotonic()
    if args.self_test or args.quick:
        say("bench: harness self-test")
        if not self_test():
            print("bench: ERROR: the harness's own tests failed", file=sys.stderr, flush=True)
            return 1
        if args.self_test:
            return 0
    try:
        status = run(args)
    except HarnessError as e:
        print(f"bench: ERROR: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    say(f"bench: done in {time.monotonic() - started:.0f} s")
    return status
