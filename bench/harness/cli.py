"""bench/run.sh: measures the server against the per-call architecture it replaces and against
the floor of a sandboxed run on this machine (harness/floor.py), in one run.

Exit status: 0 when the harness ran (whatever the numbers, and even when workloads failed: those
are recorded in the report); 1 when the harness itself could not work (server missing or not
starting, malformed JSON on its stdout; with --quick, also a floor that could not be measured);
2 for bad arguments.
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
from typing import Optional

from harness import baselines as bl
from harness import floor as fl
from harness import cpu_use, http_runs, machine, memory, python_server, report, server_runs, session_runs
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
    floor_runs: int  # the floor's measured runs per workload (hello, pandas)
    page_touch_pages: int
    page_touch_repeat: int
    wake_up_samples: int


def _plan(args: argparse.Namespace) -> Plan:
    cores = os.cpu_count() or 1
    if args.quick:
        plan = Plan(warmup=2, server_iterations=10, baseline_iterations=3, throughput_requests=32,
                    baseline_throughput_requests=8, cold_starts=2, memory_runs=2, sleep_seconds=1.5,
                    budget_s=3.0, rounds=2, floor_runs=10, page_touch_pages=1024, page_touch_repeat=3,
                    wake_up_samples=10)
    else:
        plan = Plan(warmup=20, server_iterations=300, baseline_iterations=40,
                    throughput_requests=1000, baseline_throughput_requests=64, cold_starts=10,
                    memory_runs=max(2, min(8, 2 * cores)), sleep_seconds=3.0, budget_s=60.0,
                    rounds=10, floor_runs=300, page_touch_pages=4096, page_touch_repeat=7,
                    wake_up_samples=40)
    if args.warmup is not None:
        plan.warmup = args.warmup
    if args.iterations is not None:
        plan.server_iterations = args.iterations
        plan.floor_runs = args.iterations
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
    p.add_argument("--floor", metavar="PATH",
                   help="the floor program (default: mpes-bench-floor next to the server binary)")
    p.add_argument("--no-floor", action="store_true",
                   help="do not measure the floor (no floor ratios or floor targets)")
    p.add_argument("--uv-path", default="uv", help="uv for the `uv run --script` baseline")
    p.add_argument("--python-server-venv", default=os.path.join(REPO_ROOT, ".tools", "python-server"),
                   help="environment holding the Python server 0.1.8, the real anchor "
                        "(default: .tools/python-server, made by scripts/install-deps.sh)")
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

    # What memory costs here, while no server runs: the unit in which two machines differ.
    floor_binary = None
    if args.no_floor:
        results["floor"] = {"skipped": "--no-floor"}
    else:
        floor_binary, why = fl.find_binary(server_path, args.floor)
        if floor_binary is None:
            if args.quick:
                raise HarnessError(f"{why}; --no-floor measures without it")
            results["floor"] = {"skipped": why}
            say(f"bench: SKIPPED the floor: {why}")
        else:
            results["page_touch"] = fl.page_touch(floor_binary, plan.page_touch_pages,
                                                  plan.page_touch_repeat)
            say(f"bench: memory here: {report.page_touch_text(results['page_touch'])}")
            results["wake_up"] = fl.wake_up(floor_binary, plan.wake_up_samples)
            say(f"bench: waking a process here: {report.wake_up_text(results['wake_up'])}")

    session = server_runs.Session(launcher)
    init = session.init_response.result or {}
    results["server"]["info"] = init.get("serverInfo")
    results["server"]["protocol_version"] = init.get("protocolVersion")
    results["server"]["check_environment"] = server_runs.check_environment(session)
    floor = None
    if floor_binary is not None:
        python, network = fl.interpreter_of(results["server"]["check_environment"])
        floor = fl.FloorSetup(floor_binary, python, network, log_dir, _server_env())
        results["floor"] = {"binary": floor_binary, "python": python, "network": network}

    # Warm the default zygote, then its idle footprint and the cost of each concurrent run.
    warm = server_runs.run_sequential(session, HELLO, 0, max(1, plan.warmup))
    results["server"]["run"] = warm["run"]
    if warm["first_error"]:
        say(f"bench: WARNING: hello fails on the server: {warm['first_error'][:300]}")
    # Idle: once the pool has replaced the spare the last warm-up run took.
    mem: dict = {"idle": memory.settled_tree_memory(session.server.proc.pid)}
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

    # The Python server as it really runs (uv run per call): the anchor the targets name.
    pysrv = None
    if not args.no_baselines:
        pysrv = python_server.PythonServer(args.python_server_venv, args.uv_path, log_dir, _server_env(),
                                           DEFAULT_SERVER_ARGS)
        if pysrv.available:
            try:
                pysrv.start()
            except HarnessError as e:
                pysrv.reason = f"it did not start: {e}"
        results["baselines"].append(pysrv.baseline_entry())
        if not pysrv.available:
            say(f"bench: SKIPPED {python_server.TITLE}: {pysrv.reason}")
            for w in SEQUENTIAL:
                results["sequential"][w.key]["systems"][python_server.KEY] = {"skipped": pysrv.reason}
            pysrv.close()
            pysrv = None

    with tempfile.TemporaryDirectory(prefix="mpes-bench-") as tmp:
        # World-readable so a sandbox started as another uid can still read the scripts.
        os.chmod(tmp, 0o755)
        files = bl.ScriptFiles(tmp)
        for w in SEQUENTIAL:
            _measure_workload(session, usable, files, w, plan, results, floor, pysrv)
        for n in CONCURRENCY_LEVELS:
            _measure_throughput(session, usable, files, n, plan, results, pysrv)
        if any(b.key == "docker" for b in usable) and not any("docker" in a for a in args.server_arg):
            _measure_docker_backend(server_path, server_args, log_dir, plan, results)
    if pysrv is not None:
        pysrv.close()

    results["sessions"] = session_runs.measure(session, plan.warmup, plan.server_iterations)
    if results["sessions"].get("error"):
        say(f"bench: WARNING: sessions not measured: {results['sessions']['error']}")

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
    results["floor_targets"] = report.evaluate_floor_targets(results)
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
    if args.quick and floor is not None:
        # The smoke test covers the floor too: a floor that cannot run is a broken harness.
        broken = [w.key for w in (fl.HELLO_FLOOR, fl.PANDAS_FLOOR)
                  if not report._get(results, "sequential", w.key, "systems", "floor", "latency_ms")]
        unmeasured = broken + [what for what in ("page_touch", "wake_up") if results.get(what, {}).get("error")]
        if unmeasured:
            print(f"bench: ERROR: the floor was not measured ({', '.join(unmeasured)}); "
                  f"see the report's errors and {log_dir}/floor-*.stderr.log", file=sys.stderr, flush=True)
            return 1
    return 0


def _errors_text(r: dict) -> str:
    return f"; {r['errors']} errors, first: {r['first_error'][:300]}" if r.get("errors") else ""


def _first_call(session: server_runs.Session, w, budget_s: float) -> Optional[float]:
    """The latency of one call, in ms (None when it failed)."""
    first = server_runs.ServerSeries(session, w, 1, budget_s)
    first.measure(1)
    return first.samples[0] / 1e6 if first.samples else None


def _measure_workload(session: server_runs.Session, baselines: list[bl.Baseline],
                      files: bl.ScriptFiles, w, plan: Plan, results: dict,
                      floor: Optional[fl.FloorSetup] = None,
                      pysrv: Optional[python_server.PythonServer] = None) -> None:
    """The server, every baseline, the Python server and the workload's floor (hello, pandas) on
    one workload, interleaved in rounds so that all of them are measured under the same load from
    the rest of the machine."""
    systems = results["sequential"][w.key]["systems"]
    floor_series = _start_floor(floor, w, plan, systems)
    first_ms: dict = {}
    if w is PANDAS:
        # The first call with dependencies: the Python server's uv cache starts empty.
        first_ms["server"] = _first_call(session, w, plan.budget_s)
        if pysrv is not None:
            first_ms[python_server.KEY] = _first_call(pysrv.session, w, plan.budget_s)
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
    py = None
    if pysrv is not None:
        py = server_runs.ServerSeries(pysrv.session, w.for_reference(), n_base, plan.budget_s)
        py.warm(1)
    for left in range(plan.rounds, 0, -1):
        srv.measure(_slice(srv.target - len(srv.samples), left))
        for s in series:
            s.measure(_slice(s.target - len(s.calls), left))
        if floor_series is not None:
            floor_series = _floor_slice(floor_series, _slice(floor_series.target - len(floor_series.samples), left),
                                        systems)
        if py is not None:
            py.measure(_slice(py.target - len(py.samples), left))
    srv.measure(srv.target - len(srv.samples))  # what failed calls left short, budget permitting
    if floor_series is not None:
        floor_series = _floor_cpu(floor_series, systems)
    if floor_series is not None:
        systems["floor"] = dict(floor_series.result(), title=floor_series.process.workload.title)
        floor_series.process.close()
        say(f"bench: {systems['floor']['title']}: {_lat(systems['floor']['latency_ms'])}, "
            f"{_cpu_text(systems['floor'])}{_errors_text(systems['floor'])}")

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
    if py is not None:
        rp = py.result()
        systems[python_server.KEY] = rp
        say(f"bench: {python_server.TITLE} {w.title}: {_lat(rp['latency_ms'])}{_errors_text(rp)}")
    for key, ms in first_ms.items():
        if key in systems:
            systems[key]["first_call_ms"] = ms
        say(f"bench: {'server' if key == 'server' else python_server.TITLE} {w.title}, first call: "
            + (f"{ms:.1f} ms" if ms is not None else "failed"))
    for s in series:
        rb = s.result()
        systems[s.baseline.key] = rb
        if fallback is not None and s.baseline.key != "uv":
            # Identical work for a baseline: `dependencies` only matters to uv.
            results["sequential"][fallback.key]["systems"][s.baseline.key] = rb
        say(f"bench: {s.baseline.title} {w.title}: {_lat(rb['latency_ms'])}{_errors_text(rb)}")


def _start_floor(floor: Optional[fl.FloorSetup], w, plan: Plan, systems: dict):
    """The floor's series for workload `w` (hello and pandas have one), warmed; None when it has
    none or it cannot start (then recorded in `systems["floor"]`)."""
    fw = fl.FLOORS.get(w.key)
    if floor is None or fw is None:
        return None
    try:
        series = fl.FloorSeries(floor.start(fw), plan.floor_runs, plan.budget_s)
    except fl.FloorError as e:
        systems["floor"] = {"title": fw.title, "latency_ms": None, "errors": 1, "first_error": str(e)}
        say(f"bench: WARNING: {fw.title} not measured: {e}")
        return None
    try:
        series.warm()
    except fl.FloorError as e:
        return _floor_failed(series, e, systems)
    return series


def _floor_cpu(series: fl.FloorSeries, systems: dict):
    try:
        series.measure_cpu()
        return series
    except fl.FloorError as e:
        return _floor_failed(series, e, systems)


def _floor_slice(series: fl.FloorSeries, runs: int, systems: dict):
    try:
        series.measure(runs)
        return series
    except fl.FloorError as e:
        return _floor_failed(series, e, systems)


def _floor_failed(series: fl.FloorSeries, error: Exception, systems: dict) -> None:
    series.process.close()
    r = dict(series.result(), title=series.process.workload.title)
    r["errors"] += 1
    r["first_error"] = r["first_error"] or str(error)
    systems["floor"] = r
    say(f"bench: WARNING: {r['title']} stopped: {error}")
    return None


def _cpu_text(r: dict) -> str:
    if r.get("cpu_ms_per_run") is None:
        return "CPU per run unknown"
    return f"{report.floor_cpu_text(r)}, and {r.get('page_faults_per_run'):.0f} page faults per run"


def _measure_docker_backend(server_path: str, server_args: list[str], log_dir: str, plan: Plan,
                            results: dict) -> None:
    """hello and numpy+pandas on the same server with --sandbox-backend docker (its zygotes in
    containers), next to the native rows and to `docker run` per call."""
    launcher = server_runs.ServerLauncher([server_path] + server_args + ["--sandbox-backend", "docker"],
                                          _server_env(), log_dir)
    session = server_runs.Session(launcher)
    try:
        for w in (HELLO, PANDAS):
            srv = server_runs.ServerSeries(session, w, plan.server_iterations, plan.budget_s)
            srv.warm(plan.warmup)
            srv.measure(srv.target)
            r = srv.result()
            results["sequential"][w.key]["systems"]["server_docker"] = r
            say(f"bench: server (docker backend) {w.title}: {_lat(r['latency_ms'])}{_errors_text(r)}")
    finally:
        session.close()
    results["baselines"].append({"key": "server_docker", "title": "this server, docker backend",
                                 "available": True, "unavailable_reason": "", "version": ""})


def _slice(remaining: int, rounds_left: int) -> int:
    return max(0, -(-remaining // rounds_left))  # ceil: the last round takes the rest


def _measure_throughput(session: server_runs.Session, baselines: list[bl.Baseline],
                        files: bl.ScriptFiles, level: int, plan: Plan, results: dict,
                        pysrv: Optional[python_server.PythonServer] = None) -> None:
    """hello with `level` requests in flight: on the server's one connection, then as `level`
    processes at a time for each baseline, back to back."""
    out = results["throughput"][str(level)]
    before = cpu_use.snapshot(session.server.proc.pid)
    r = server_runs.run_concurrent(session, HELLO, level, max(plan.throughput_requests, level),
                                   plan.budget_s)
    r["cpu_per_call"] = cpu_use.per_call(before, cpu_use.snapshot(session.server.proc.pid), r["completed"])
    out["server"] = r
    say(f"bench: server hello, {level} in flight: {_rps(r)}{_errors_text(r)}; "
        f"{cpu_use.text(r['cpu_per_call'])}")
    if pysrv is not None:
        rp = server_runs.run_concurrent(pysrv.session, HELLO, level,
                                        max(plan.baseline_throughput_requests, level), plan.budget_s)
        out[python_server.KEY] = rp
        say(f"bench: {python_server.TITLE} hello, {level} in flight: {_rps(rp)}{_errors_text(rp)}")
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
