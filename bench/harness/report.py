"""Turns the results dict into the Markdown table, the JSON file, the targets and the chart."""

from __future__ import annotations

import json
import os
from typing import Optional

from harness import cpu_use, session_runs

MIB_KB = 1024  # smaps reports kB (KiB)

# The targets, on the fully sandboxed native backend; p50 unless said. Printed next to
# the measured values; never a reason to fail.
TARGETS = (
    ("hello_p50", "hello round trip (p50)", "≤ 1.5 ms"),
    ("hello_ratio", "hello: bwrap+python p50 / server p50", "≥ 10×"),
    ("pandas_ratio", "numpy+pandas: bwrap+python p50 / server p50", "≥ 25×"),
    ("throughput4", "throughput, hello, 4 in flight", "≥ 500 runs/s"),
    ("initialize", "initialize answered after process start (p50)", "≤ 20 ms"),
    ("first_result", "first hello result after process start (p50)", "≤ 150 ms"),
    ("idle_rss", "idle RSS of the server's process tree", "≤ 60 MiB"),
    ("pss_per_run", "extra PSS per concurrent hello run", "≤ 2 MiB"),
    ("pyserver_hello_ratio", "hello: Python server 0.1.8 p50 / server p50", "≥ 30×"),
    ("pyserver_pandas_ratio", "numpy+pandas, warm: Python server 0.1.8 p50 / server p50", "≥ 50×"),
)

SYSTEM_ORDER = ("server", "server_docker", "floor", "pyserver", "bwrap", "python", "uv", "docker")
FLOOR_TITLE = "floor (same interpreter and sandbox, one clone per run)"

# Issue 19's targets: ratios within one run, so that they can be judged on any machine. Each is
# (key, what, limit, at_most). Printed as PASS / MISS; never a reason to fail.
FLOOR_TARGETS = (
    ("hello_floor", "hello p50 ≤ 1.3× its floor", 1.3, True),
    ("pandas_floor", "numpy + pandas p50 ≤ 1.3× its floor", 1.3, True),
    ("output_vs_bwrap", "1 MiB of output ≥ 2× faster than bwrap+python (p50)", 2.0, False),
    ("exception_vs_hello", "exception + traceback p50 ≤ 1.3× hello p50", 1.3, True),
    ("throughput4_floor", "hello throughput, 4 in flight ≥ 70% of what the floor's CPU per run "
                          "allows on the cores present", 0.7, False),
    # The words: the server and its zygote (each zygote, not the spares it forked).
    ("idle_rss_40", "idle RSS of the server and its zygote ≤ 40 MiB", 40.0, True),
    # The stricter reading judged until now: every process of the tree (the zygote's spares,
    # pasta, bwrap, the network agent), whose RSS counts a page shared by N of them N times.
    ("idle_tree_40", "idle RSS of the server's whole process tree ≤ 40 MiB (stricter reading)",
     40.0, True),
)


def _get(d: Optional[dict], *path):
    for key in path:
        if not isinstance(d, dict) or key not in d or d[key] is None:
            return None
        d = d[key]
    return d


def _p50(results: dict, workload: str, system: str) -> Optional[float]:
    return _get(results, "sequential", workload, "systems", system, "latency_ms", "p50")


def _verdict(value: Optional[float], limit: float, at_most: bool) -> str:
    if value is None:
        return "n/a"
    ok = value <= limit if at_most else value >= limit
    return "met" if ok else "NOT met"


def server_and_zygote_rss_kb(tree: Optional[dict]) -> Optional[int]:
    """RSS of the tree's first process (the server) and of each zygote in it (a process named
    zygote whose parent is not one: not the spares it forked), or None without processes."""
    procs = (tree or {}).get("processes") or []
    if not procs:
        return None
    names = {p["pid"]: p.get("argv0") for p in procs}
    return procs[0]["rss_kb"] + sum(p["rss_kb"] for p in procs[1:]
                                    if p.get("argv0") == "zygote" and names.get(p.get("ppid")) != "zygote")


def evaluate_targets(results: dict) -> list[dict]:
    hello = _p50(results, "hello", "server")
    hello_b = _p50(results, "hello", "bwrap")
    pandas = _p50(results, "pandas", "server")
    pandas_b = _p50(results, "pandas", "bwrap")
    tp4 = _get(results, "throughput", "4", "server", "runs_per_s")
    init = _get(results, "cold_start", "initialize_ms", "p50")
    first = _get(results, "cold_start", "first_result_ms", "p50")
    idle_rss_kb = _get(results, "memory", "idle", "total_rss_kb")
    pss_run_kb = _get(results, "memory", "concurrent", "extra_pss_kb_per_run")

    def ratio(base, ours):
        return base / ours if base is not None and ours else None

    hello_ratio = ratio(hello_b, hello)
    py_hello_ratio = ratio(_p50(results, "hello", "pyserver"), hello)
    py_pandas_ratio = ratio(_p50(results, "pandas", "pyserver"), pandas)
    pandas_ratio = ratio(pandas_b, pandas)
    idle_rss = idle_rss_kb / MIB_KB if idle_rss_kb is not None else None
    pss_run = pss_run_kb / MIB_KB if pss_run_kb is not None else None
    measured = {
        "hello_p50": (hello, f"{hello:.2f} ms" if hello is not None else "—", _verdict(hello, 1.5, True)),
        "hello_ratio": (hello_ratio, f"{hello_ratio:.1f}×" if hello_ratio else "—",
                        _verdict(hello_ratio, 10, False)),
        "pandas_ratio": (pandas_ratio, f"{pandas_ratio:.1f}×" if pandas_ratio else "—",
                         _verdict(pandas_ratio, 25, False)),
        "throughput4": (tp4, f"{tp4:.0f} runs/s" if tp4 is not None else "—", _verdict(tp4, 500, False)),
        "initialize": (init, f"{init:.1f} ms" if init is not None else "—", _verdict(init, 20, True)),
        "first_result": (first, f"{first:.1f} ms" if first is not None else "—",
                         _verdict(first, 150, True)),
        "idle_rss": (idle_rss, f"{idle_rss:.1f} MiB" if idle_rss is not None else "—",
                     _verdict(idle_rss, 60, True)),
        "pss_per_run": (pss_run, f"{pss_run:.2f} MiB" if pss_run is not None else "—",
                        _verdict(pss_run, 2, True)),
        "pyserver_hello_ratio": (py_hello_ratio, f"{py_hello_ratio:.1f}×" if py_hello_ratio else "—",
                                 _verdict(py_hello_ratio, 30, False)),
        "pyserver_pandas_ratio": (py_pandas_ratio, f"{py_pandas_ratio:.1f}×" if py_pandas_ratio else "—",
                                  _verdict(py_pandas_ratio, 50, False)),
    }
    return [{"key": key, "what": what, "target": target, "value": measured[key][0],
             "measured": measured[key][1], "status": measured[key][2]}
            for key, what, target in TARGETS]


def floor_of(workload_key: str) -> str:
    """The floor a workload is compared with: pandas's own, else hello's."""
    return "pandas" if workload_key.startswith("pandas") else "hello"


def _floor_p50(results: dict, workload_key: str) -> Optional[float]:
    return _p50(results, floor_of(workload_key), "floor")


def floor_cpu_text(f: Optional[dict]) -> str:
    """A floor's CPU per run: the whole machine's while its batches ran (the figure used, read as
    the server's CPU per call is), with its processes' own (getrusage) beside it."""
    f = f or {}
    cpu, own, machine = f.get("cpu_ms_per_run"), f.get("own_cpu_ms_per_run"), f.get("machine_cpu_ms_per_run")
    if cpu is None:
        return "CPU per run unknown"
    if f.get("cpu_from") == "machine" and own is not None:
        share = f.get("machine_busy_share")
        busy = f": the CPUs were {share * 100:.0f}% busy while its batches ran" if share is not None else ""
        over = f" over {f['cpu_runs']} runs" if f.get("cpu_runs") else ""
        return (f"{cpu:.2f} ms of machine CPU per run{over} ({own:.2f} ms in the floor's processes, the "
                f"rest in kernel workers and any other load{busy})")
    if machine is not None:
        return (f"{cpu:.2f} ms of CPU per run in the floor's processes (the machine's busy time read "
                f"{machine:.2f} ms per run, below that, which only noise can do: the floor's own is used)")
    return f"{cpu:.2f} ms of CPU per run in the floor's processes"


def _floor_cpu_short(f: Optional[dict]) -> str:
    """The floor's CPU per run as the throughput target's line names it."""
    f = f or {}
    cpu = f.get("cpu_ms_per_run")
    if f.get("cpu_from") == "machine":
        return f"{cpu:.2f} ms machine CPU per floor run"
    if f.get("machine_cpu_ms_per_run") is not None:
        return f"{cpu:.2f} ms floor CPU per run, its processes' own: the machine's reading was lower"
    return f"{cpu:.2f} ms floor CPU per run"


def floor_throughput_allowed(results: dict) -> Optional[float]:
    """Runs/s the cores present could complete at the hello floor's CPU per run (the machine's)."""
    cpu = _get(results, "sequential", "hello", "systems", "floor", "cpu_ms_per_run")
    cores = _get(results, "machine", "cores")
    if not cpu or not cores:
        return None
    return cores * 1000.0 / cpu


def evaluate_floor_targets(results: dict) -> list[dict]:
    def judged(value: Optional[float], limit: float, at_most: bool) -> str:
        if value is None:
            return "n/a"
        return "PASS" if (value <= limit if at_most else value >= limit) else "MISS"

    def over(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return a / b if a is not None and b else None

    hello = _p50(results, "hello", "server")
    hello_floor = _p50(results, "hello", "floor")
    pandas_key = "pandas"
    pandas = _p50(results, "pandas", "server")
    if pandas is None and _p50(results, "pandas_undeclared", "server") is not None:
        pandas_key, pandas = "pandas_undeclared", _p50(results, "pandas_undeclared", "server")
    pandas_floor = _p50(results, "pandas", "floor")
    out_srv, out_bwrap = _p50(results, "output1mb", "server"), _p50(results, "output1mb", "bwrap")
    exc = _p50(results, "exception", "server")
    tp4 = _get(results, "throughput", "4", "server", "runs_per_s")
    allowed = floor_throughput_allowed(results)
    hello_floor_run = _get(results, "sequential", "hello", "systems", "floor")
    rss_kb = _get(results, "memory", "idle", "total_rss_kb")
    rss = rss_kb / MIB_KB if rss_kb is not None else None
    pss_kb = _get(results, "memory", "idle", "total_pss_kb")
    count = _get(results, "memory", "idle", "count")
    pair_kb = server_and_zygote_rss_kb(_get(results, "memory", "idle"))
    pair = pair_kb / MIB_KB if pair_kb is not None else None

    def ms(v):
        return f"{v:.2f} ms" if v is not None else "—"

    values = {
        "hello_floor": (over(hello, hello_floor),
                        f"server {ms(hello)} ÷ floor {ms(hello_floor)}"),
        "pandas_floor": (over(pandas, pandas_floor),
                         f"server {ms(pandas)}{' (dependencies not declared)' if pandas_key != 'pandas' else ''}"
                         f" ÷ floor {ms(pandas_floor)}"),
        "output_vs_bwrap": (over(out_bwrap, out_srv),
                            f"bwrap+python {ms(out_bwrap)} ÷ server {ms(out_srv)}"),
        "exception_vs_hello": (over(exc, hello), f"exception {ms(exc)} ÷ hello {ms(hello)}"),
        "throughput4_floor": (over(tp4, allowed),
                              (f"{tp4:.0f} runs/s" if tp4 else "—") + " ÷ "
                              + (f"{allowed:.0f} runs/s ({_get(results, 'machine', 'cores')} cores ÷ "
                                 f"{_floor_cpu_short(hello_floor_run)})" if allowed
                                 else "— (floor CPU unknown)")),
        "idle_rss_40": (pair, f"{pair:.1f} MiB" if pair is not None else "—"),
        "idle_tree_40": (rss, (f"{rss:.1f} MiB" if rss is not None else "—")
                         + (f" summed over {count} processes" if count else "")
                         + (f" (PSS, each shared page counted once: {pss_kb / MIB_KB:.1f} MiB)"
                            if pss_kb is not None else "")),
    }
    out = []
    for key, what, limit, at_most in FLOOR_TARGETS:
        value, detail = values[key]
        if key in ("idle_rss_40", "idle_tree_40"):
            shown = detail
        elif key == "throughput4_floor":
            shown = f"{value * 100:.0f}% = {detail}" if value is not None else detail
        else:
            shown = f"{value:.2f}× = {detail}" if value is not None else detail
        out.append({"key": key, "what": what, "value": value, "measured": shown,
                    "status": judged(value, limit, at_most)})
    return out


def page_touch_text(pt: Optional[dict]) -> str:
    if not pt:
        return "not measured"
    if pt.get("error"):
        return f"not measured ({pt['error']})"
    return (f"per 4 KiB page: fresh anonymous page {pt['fresh_page_us']:.2f} µs, copy-on-write fault "
            f"after fork {pt['cow_fault_us']:.2f} µs, first read after fork "
            f"{pt['first_read_after_fork_us']:.2f} µs (again {pt['read_again_us']:.3f} µs); "
            f"fork of a process holding {pt['pages'] * pt['page_size'] >> 20} MiB {pt['fork_us']:.0f} µs")


def wake_up_text(wu: Optional[dict]) -> str:
    if not wu:
        return "not measured"
    if wu.get("error"):
        return f"not measured ({wu['error']})"
    text = (f"a pipe round trip to a process asleep for {wu['idle_ms']} ms takes {wu['same_cpu_us']:.1f} µs "
            f"on its waker's CPU")
    if wu.get("cross_cpu_us") is None:
        return text + " (one CPU: nothing to compare across CPUs)"
    return (text + f", {wu['cross_cpu_us']:.1f} µs on another CPU ({wu['cross_cpu_back_to_back_us']:.1f} µs "
            f"back to back); every call crosses several such wake-ups")


def _floor_own_network(results: dict) -> bool:
    """Whether the floor's runs had network namespaces of their own (as the server's do with
    --network off, and with --network on as root with pasta and nft)."""
    floors = [_get(w, "systems", "floor") for w in (results.get("sequential") or {}).values()]
    said = [f.get("own_network") for f in floors if isinstance(f, dict) and "own_network" in f]
    if said:
        return any(said)
    return (results.get("floor") or {}).get("network") == "off"


def _floor_section(results: dict) -> list[str]:
    fl = results.get("floor") or {}
    lines = ["## Against the floor (same session)", ""]
    if fl.get("skipped"):
        return lines + [f"Not measured: {fl['skipped']}.", ""]
    lines.append(f"The floor: `mpes-bench-floor` embeds the server's interpreter ({fl.get('python')}) "
                 "as the zygote does, in the zygote's bubblewrap sandbox, and per run clones one "
                 "child into the run's namespaces (user, pid, mount, ipc, uts, cgroup"
                 + (", net" if _floor_own_network(results) else "")
                 + ") with its tmpfs mounts and /proc, runs the code with stdout to a pipe read to "
                 "EOF, and reaps it: no protocol, no second process, no identity change, limits or "
                 "seccomp. Workloads other than pandas are compared with the hello floor.")
    lines += ["", "| workload | server p50 ms | floor | floor p50 ms | server ÷ floor | "
                  "bwrap+python p50 ms | bwrap+python ÷ server |", "|---|---:|---|---:|---:|---:|---:|"]
    for wkey, w in results.get("sequential", {}).items():
        srv = _p50(results, wkey, "server")
        if srv is None:
            continue
        fkey = floor_of(wkey)
        fp50 = _floor_p50(results, wkey)
        bw = _p50(results, wkey, "bwrap")
        lines.append(f"| {w['title']} | {_ms(srv)} | {fkey} | {_ms(fp50)} | "
                     f"{f'{srv / fp50:.2f}×' if fp50 else '—'} | {_ms(bw)} | "
                     f"{f'{bw / srv:.1f}×' if bw else '—'} |")
    lines.append("")
    for fkey in ("hello", "pandas"):
        f = _get(results, "sequential", fkey, "systems", "floor")
        if f and f.get("cpu_ms_per_run") is not None:
            lines.append(f"- {f.get('title', fkey)}: {floor_cpu_text(f)}, and "
                         f"{f['page_faults_per_run']:.0f} page faults per run ({f['runs']} runs).")
    allowed = floor_throughput_allowed(results)
    hello_floor = _get(results, "sequential", "hello", "systems", "floor") or {}
    cpu = hello_floor.get("cpu_ms_per_run")
    if allowed:
        tp = [f"{n} in flight {_get(per, 'server', 'runs_per_s'):.0f} runs/s"
              for n, per in results.get("throughput", {}).items() if _get(per, "server", "runs_per_s")]
        lines.append(f"- At the hello floor's CPU per run ({_floor_cpu_short(hello_floor)}), "
                     f"{_get(results, 'machine', 'cores')} cores allow {allowed:.0f} runs/s; the server: "
                     f"{', '.join(tp) or 'not measured'}.")
    split = _get(results, "throughput", "4", "server", "cpu_per_call")
    if split:
        budget = f" (70% of the floor's throughput allows {cpu / 0.7:.2f} ms)" if cpu else ""
        lines.append(f"- With 4 in flight, {cpu_use.text(split)}{budget}.")
    lines.append(f"- Memory here, {page_touch_text(results.get('page_touch'))}.")
    lines.append(f"- Waking a process here, {wake_up_text(results.get('wake_up'))}.")
    srv_py = _get(results, "server", "run", "python_version")
    for fkey in ("hello", "pandas"):
        fpy = _get(results, "sequential", fkey, "systems", "floor", "python_version")
        if srv_py and fpy and srv_py != fpy:
            lines.append(f"- WARNING: the {fkey} floor ran Python {fpy}, the server's runs {srv_py}.")
    lines.append("")
    lines += ["Targets (issue 19; ratios within this run, never a pass/fail of the harness):", ""]
    for t in results.get("floor_targets", []):
        lines.append(f"- **{t['status']}** {t['what']}: {t['measured']}")
    lines.append("")
    return lines


# ---- Markdown ------------------------------------------------------------------------------

def _ms(v: Optional[float]) -> str:
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _mib(kb: Optional[float]) -> str:
    return "—" if kb is None else f"{kb / MIB_KB:.1f}"


def _system_title(results: dict, key: str) -> str:
    if key == "server":
        return "**this server**"
    if key == "floor":
        return FLOOR_TITLE
    for b in results.get("baselines", []):
        if b["key"] == key:
            return b["title"]
    return key


def machine_line(m: dict) -> str:
    mem = f", {m['memory_gib']:.0f} GiB RAM" if m.get("memory_gib") else ""
    return (f"{m.get('cpu_model')} ({m.get('cores')} cores{mem}), {m.get('os')}, "
            f"kernel {m.get('kernel')}, {m.get('python_baselines')} (/usr/bin/python3), "
            f"{m.get('bwrap')}")


def to_markdown(results: dict) -> str:
    m = results["machine"]
    srv = results.get("server", {})
    run = srv.get("run") or {}
    lines = ["# Benchmark results", ""]
    lines.append(f"- Machine: {machine_line(m)}.")
    info = srv.get("info") or {}
    lines.append(f"- Server: `{srv.get('path')}` {info.get('version', '')} "
                 f"(commit {m.get('commit') or 'unknown'}), sandbox: {run.get('sandbox', 'unknown')}, "
                 f"Python {run.get('python_version', 'unknown')}, "
                 f"execution path: {run.get('execution_path', 'unknown')}; "
                 f"extra flags: `{' '.join(srv.get('extra_args', [])) or 'none'}`.")
    mode = "quick (smoke test: too few iterations to quote)" if results.get("quick") else "full"
    it = results.get("iterations", {})
    base = f", baselines {it.get('baseline')} calls" if results.get("baselines") else ", no baselines"
    budget = f" or {it['budget_s']:g} s" if it.get("budget_s") else ""
    lines.append(f"- Run: {results.get('started_at')}, {mode}; server {it.get('server')} calls per "
                 f"workload after {it.get('warmup')} warm-up calls{base} (or fewer, at least 3, "
                 f"once a workload has taken{budget or ' its time budget'}); latency = request "
                 f"written → response parsed (server), spawn → output read and exit reaped "
                 f"(baselines).")
    la0, la1 = m.get("load_average_start"), m.get("load_average_end")
    if la0:
        lines.append(f"- Load average (1/5/15 min) at start {la0}" + (f", at end {la1}" if la1 else "")
                     + ": anything else running on the machine skews the numbers.")
    for b in results.get("baselines", []):
        if not b["available"]:
            lines.append(f"- Skipped baseline {b['title']}: {b['unavailable_reason']}.")
    if srv.get("restarts"):
        lines.append(f"- The server died and was restarted {srv['restarts']} time(s) during the run.")
    lines.append("")

    lines += ["## Targets (p50 unless said; never a pass/fail of the harness)", "",
              "| target | goal | measured | |", "|---|---|---|---|"]
    for t in results.get("targets", []):
        lines.append(f"| {t['what']} | {t['target']} | {t['measured']} | {t['status']} |")
    lines.append("")

    lines += _floor_section(results)

    lines += ["## Latency per call (ms)", "",
              "| workload | system | n | p50 | p90 | p99 | mean | min | max | p50 ÷ server p50 "
              "| run only, p50 |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for wkey, w in results.get("sequential", {}).items():
        server_p50 = _p50(results, wkey, "server")
        for skey in SYSTEM_ORDER:
            s = w["systems"].get(skey)
            if s is None or s.get("skipped"):
                continue
            lat = s.get("latency_ms")
            ratio = "—"
            if skey != "server" and lat and server_p50:
                ratio = f"{lat['p50'] / server_p50:.1f}×"
            elif skey == "server":
                ratio = "1×" if lat else "—"
            err = f" ({s['errors']} errors)" if s.get("errors") else ""
            own = _ms(_get(s, "server_reported_ms", "p50"))
            if lat:
                lines.append(f"| {w['title']} | {_system_title(results, skey)}{err} | {lat['n']} | "
                             f"{_ms(lat['p50'])} | {_ms(lat['p90'])} | {_ms(lat['p99'])} | "
                             f"{_ms(lat['mean'])} | {_ms(lat['min'])} | {_ms(lat['max'])} | {ratio} "
                             f"| {own} |")
            else:
                lines.append(f"| {w['title']} | {_system_title(results, skey)}{err} | 0 | "
                             f"failed | | | | | | | |")
    lines.append("")
    lines.append("*run only*: the server's own `duration_ms` of the run (without the protocol and "
                 "queueing), where it reports one.")
    lines.append("")

    lines += ["## Throughput (hello, requests in flight)", "",
              "| in flight | system | runs/s | p50 ms | p99 ms | completed |",
              "|---:|---|---:|---:|---:|---:|"]
    for n, per in results.get("throughput", {}).items():
        for skey in SYSTEM_ORDER:
            s = per.get(skey)
            if s is None or s.get("skipped"):
                continue
            rps = f"{s['runs_per_s']:.0f}" if s.get("runs_per_s") else "—"
            lat = s.get("latency_ms") or {}
            lines.append(f"| {n} | {_system_title(results, skey)} | {rps} | {_ms(lat.get('p50'))} | "
                         f"{_ms(lat.get('p99'))} | {s.get('completed')}/{s.get('requests')} |")
    lines.append("")

    cs = results.get("cold_start") or {}
    if cs:
        lines += ["## Start-up (a fresh server process each time)", "",
                  "| from process start to | n | p50 ms | p90 ms | min ms | max ms |",
                  "|---|---:|---:|---:|---:|---:|"]
        for key, title in (("initialize_ms", "`initialize` answered"),
                           ("first_result_ms", "first `print('hello')` result")):
            s = cs.get(key)
            if s:
                lines.append(f"| {title} | {s['n']} | {_ms(s['p50'])} | {_ms(s['p90'])} | "
                             f"{_ms(s['min'])} | {_ms(s['max'])} |")
        sd = cs.get("shutdown_s")
        if sd:
            lines.append(f"| stdin closed → exit (shutdown) | {sd['n']} | {_ms(sd['p50'] * 1000)} | "
                         f"{_ms(sd['p90'] * 1000)} | {_ms(sd['min'] * 1000)} | {_ms(sd['max'] * 1000)} |")
        lines.append("")

    lines += _http_section(results)
    lines += session_runs.section(results, _ms)

    mem = results.get("memory") or {}
    if mem:
        lines += ["## Memory (server process tree)", ""]
        for key, title in (("idle", "idle after warm-up (the server's whole process tree)"),
                           ("after_workloads", "after every workload (incl. the pandas environment)")):
            tree = mem.get(key)
            if not tree:
                continue
            lines += [f"{title}:", "", "| process | pid | RSS MiB | PSS MiB |", "|---|---:|---:|---:|"]
            for p in tree["processes"]:
                lines.append(f"| {p['argv0']} | {p['pid']} | {_mib(p['rss_kb'])} | {_mib(p['pss_kb'])} |")
            lines.append(f"| **total** ({tree['count']} processes) | | {_mib(tree['total_rss_kb'])} | "
                         f"{_mib(tree['total_pss_kb'])} |")
            lines.append("")
        c = mem.get("concurrent")
        if c:
            lines.append(f"With {c['runs_in_flight']} sleeping hello runs sent, {c.get('runs_alive')} alive "
                         f"at once ({c['processes_added']} processes added): PSS "
                         f"{_mib(_get(c, 'idle', 'total_pss_kb'))} → {_mib(_get(c, 'busy', 'total_pss_kb'))} MiB, "
                         f"extra PSS per run {_mib(c.get('extra_pss_kb_per_run'))} MiB, "
                         f"extra RSS per run {_mib(c.get('extra_rss_kb_per_run'))} MiB.")
            lines.append("")

    errs = collect_errors(results)
    if errs:
        lines += ["## Errors", ""]
        lines += [f"- {e}" for e in errs]
        lines.append("")
    return "\n".join(lines)


def _http_section(results: dict) -> list[str]:
    h = results.get("http")
    if not h:
        return []
    lines = ["## Transports: stdio, Streamable HTTP, HAProxy + 3 replicas (print('hello'))", ""]
    if h.get("error"):
        return lines + [f"Not measured: {h['error']}", ""]
    stdio = _get(results, "sequential", "hello", "systems", "server", "latency_ms")
    direct = _get(h, "direct", "hello", "latency_ms")
    balanced = h.get("balanced") or {}
    lines += ["One call at a time on one connection (HTTP: stateless 2026-07-28 POSTs, JSON answers, "
              "keep-alive):", "",
              "| transport | n | p50 ms | p90 ms | p99 ms | p50 ÷ stdio p50 |", "|---|---:|---:|---:|---:|---:|"]
    rows = [("stdio", stdio), ("Streamable HTTP, one server", direct)]
    if balanced.get("skipped"):
        lines.append(f"(HAProxy not measured: {balanced['skipped']})")
    else:
        rows.append((f"HTTP through HAProxy, {balanced.get('replicas', 3)} replicas",
                     _get(balanced, "hello", "latency_ms")))
    for title, lat in rows:
        if not lat:
            lines.append(f"| {title} | 0 | failed | | | |")
            continue
        ratio = f"{lat['p50'] / stdio['p50']:.2f}×" if stdio else "—"
        lines.append(f"| {title} | {lat['n']} | {_ms(lat['p50'])} | {_ms(lat['p90'])} | "
                     f"{_ms(lat['p99'])} | {ratio} |")
    lines += ["", "Throughput (stdio: requests in flight on one connection; HTTP: one connection "
              "per request in flight):", "",
              "| in flight | stdio runs/s | HTTP runs/s | HAProxy + replicas runs/s |", "|---:|---:|---:|---:|"]
    for n in results.get("throughput", {}):
        cells = []
        for value in (_get(results, "throughput", n, "server", "runs_per_s"),
                      _get(h, "direct", "throughput", n, "runs_per_s"),
                      _get(balanced, "throughput", n, "runs_per_s")):
            cells.append(f"{value:.0f}" if value else "—")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def to_readme_table(results: dict) -> str:
    """The compact table for the README's performance section: p50 per workload and system."""
    m = results["machine"]
    run = _get(results, "server", "run") or {}
    has_floor = any(_get(w, "systems", "floor", "latency_ms") for w in results.get("sequential", {}).values())
    shown = [k for k in SYSTEM_ORDER
             if k == "server" or (k == "floor" and has_floor)
             or any(b["key"] == k and b["available"] for b in results.get("baselines", []))]
    head = "| workload (p50) | " + " | ".join(_system_title(results, k) for k in shown) + " | speed-up vs bwrap+python |"
    lines = [f"Measured with `bench/run.sh` on {machine_line(m)}; server sandbox "
             f"{run.get('sandbox', 'unknown')}, Python {run.get('python_version', 'unknown')}, "
             f"{results.get('started_at')}, load average at start {m.get('load_average_start')}.", "",
             head, "|---|" + "---:|" * (len(shown) + 1)]
    for wkey, w in results.get("sequential", {}).items():
        cells = []
        for k in shown:
            s = w["systems"].get(k) or {}
            p50 = _get(s, "latency_ms", "p50")
            cells.append(f"{_ms(p50)} ms" if p50 is not None else ("failed" if s.get("errors") else "—"))
        ours, base = _p50(results, wkey, "server"), _p50(results, wkey, "bwrap")
        speed = f"{base / ours:.1f}×" if ours and base else "—"
        lines.append(f"| {w['title']} | " + " | ".join(cells) + f" | {speed} |")
        firsts = [_get(w["systems"].get(k) or {}, "first_call_ms") for k in shown]
        if any(v is not None for v in firsts):
            lines.append(f"| {w['title']}, first call | "
                         + " | ".join(f"{_ms(v)} ms" if v is not None else "—" for v in firsts) + " | — |")
    for n, per in results.get("throughput", {}).items():
        cells = []
        for k in shown:
            rps = _get(per, k, "runs_per_s")
            cells.append(f"{rps:.0f} runs/s" if rps else "—")
        ours, base = _get(per, "server", "runs_per_s"), _get(per, "bwrap", "runs_per_s")
        speed = f"{ours / base:.1f}×" if ours and base else "—"
        lines.append(f"| hello throughput, {n} in flight | " + " | ".join(cells) + f" | {speed} |")
    h = results.get("http") or {}
    pad = " |" * (len(shown) - 1) + " |"
    for where, title in (("direct", "over Streamable HTTP"), ("balanced", "over HTTP, HAProxy + 3 replicas")):
        part = h.get(where) or {}
        if not part or part.get("skipped"):
            continue
        p50 = _get(part, "hello", "latency_ms", "p50")
        lines.append(f"| print('hello') {title} | {_ms(p50) + ' ms' if p50 is not None else '—'} |" + pad)
        for n, r in (part.get("throughput") or {}).items():
            rps = r.get("runs_per_s")
            lines.append(f"| hello throughput {title}, {n} in flight | "
                         f"{f'{rps:.0f} runs/s' if rps else '—'} |" + pad)
    cs = results.get("cold_start") or {}
    for key, title in (("initialize_ms", "`initialize` after process start"),
                       ("first_result_ms", "first result after process start")):
        p50 = _get(cs, key, "p50")
        lines.append(f"| {title} | {_ms(p50) + ' ms' if p50 is not None else '—'} |"
                     + " |" * (len(shown) - 1) + " |")
    mem = results.get("memory") or {}
    idle = _get(mem, "idle", "total_rss_kb")
    per_run = _get(mem, "concurrent", "extra_pss_kb_per_run")
    lines.append(f"| memory: idle RSS of the server's process tree; extra PSS per concurrent run | "
                 f"{_mib(idle)} MiB; {_mib(per_run)} MiB |" + " |" * (len(shown) - 1) + " |")
    lines += ["", "| target | goal | measured | |", "|---|---|---|---|"]
    for t in results.get("targets", []):
        lines.append(f"| {t['what']} | {t['target']} | {t['measured']} | {t['status']} |")
    if results.get("floor_targets"):
        lines += ["", "| floor target (ratio in this run) | measured | |", "|---|---|---|"]
        for t in results["floor_targets"]:
            lines.append(f"| {t['what']} | {t['measured']} | {t['status']} |")
        lines += ["", f"Memory here, {page_touch_text(results.get('page_touch'))}.",
                  f"Waking a process here, {wake_up_text(results.get('wake_up'))}."]
    return "\n".join(lines)


def collect_errors(results: dict) -> list[str]:
    out: list[str] = []
    for wkey, w in results.get("sequential", {}).items():
        for skey, s in w["systems"].items():
            if s.get("first_error"):
                out.append(f"{w['title']} on {skey}: {s['errors']} failed; first: "
                           f"{_oneline(s['first_error'])}")
    for n, per in results.get("throughput", {}).items():
        for skey, s in per.items():
            if s.get("first_error"):
                out.append(f"throughput {n} in flight on {skey}: {s['errors']} failed; first: "
                           f"{_oneline(s['first_error'])}")
    for run in (results.get("cold_start") or {}).get("runs", []):
        if run.get("error"):
            out.append(f"cold start: {_oneline(run['error'])}")
    for where in ("direct", "balanced"):
        part = _get(results, "http", where) or {}
        for what, r in [("hello", part.get("hello"))] + [
                (f"{n} in flight", r) for n, r in (part.get("throughput") or {}).items()]:
            if r and r.get("first_error"):
                out.append(f"HTTP ({where}) {what}: {r['errors']} failed; first: {_oneline(r['first_error'])}")
    c = _get(results, "memory", "concurrent")
    if c and c.get("first_error"):
        out.append(f"memory (concurrent sleeps): {_oneline(c['first_error'])}")
    for key, what in (("page_touch", "page touch"), ("wake_up", "wake-up")):
        measured = results.get(key)
        if measured and measured.get("error"):
            out.append(f"{what}: {_oneline(measured['error'])}")
    env = _get(results, "server", "check_environment")
    if env and env.get("error"):
        out.append(f"check_environment: {_oneline(env['error'])}")
    return out


def _oneline(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " …"


# ---- files ---------------------------------------------------------------------------------

def write_json(results: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_chart(results: dict, path: str) -> Optional[str]:
    """SVG of the latency distributions; returns why not when matplotlib is unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"matplotlib is not available ({e}); install python3-matplotlib for the chart"
    matplotlib.rcParams["svg.hashsalt"] = "mpes-bench"  # stable ids: diffs show real changes
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small and searchable
    seq = results.get("sequential", {})
    panels = [(w["title"], w["systems"]) for w in seq.values()]
    n_panels = len(panels) + 1
    cols = 2
    rows = (n_panels + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    colours = {"server": "#1b7837", "server_docker": "#5aae61", "floor": "#808080", "pyserver": "#e08214",
               "bwrap": "#b2182b", "python": "#2166ac", "uv": "#762a83", "docker": "#35978f"}
    for ax, (title, systems) in zip(flat, panels):
        data, labels, cols_used, failed = [], [], [], []
        for skey in SYSTEM_ORDER:
            s = systems.get(skey)
            if s and s.get("samples_ms"):
                data.append(s["samples_ms"])
                labels.append(_system_title(results, skey).strip("*"))
                cols_used.append(colours[skey])
            elif s and s.get("errors"):
                failed.append(_system_title(results, skey).strip("*"))
        ax.set_title(title + (f" — failed on: {', '.join(failed)}" if failed else ""), fontsize=10)
        if not data:
            ax.text(0.5, 0.5, "no successful runs", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            continue
        box = ax.boxplot(data[::-1], vert=False, whis=(1, 99), showfliers=False, patch_artist=True,
                         widths=0.6)
        for patch, colour in zip(box["boxes"], cols_used[::-1]):
            patch.set_facecolor(colour)
            patch.set_alpha(0.6)
        ax.set_yticks(range(1, len(labels) + 1), labels[::-1], fontsize=8)
        ax.set_xscale("log")
        _plain_log_ticks(ax)
        ax.set_xlabel("ms per call (log; box p25–p75, whiskers p1–p99)", fontsize=8)
        ax.grid(axis="x", which="both", alpha=0.3)
    tp_ax = flat[len(panels)]
    tp = results.get("throughput", {})
    bars, widths, bar_cols = [], [], []
    for n, per in tp.items():
        for skey in SYSTEM_ORDER:
            s = per.get(skey)
            if s and s.get("runs_per_s"):
                name = _system_title(results, skey).strip("*").split(" (")[0]
                bars.append(f"{name}, {n} in flight")
                widths.append(s["runs_per_s"])
                bar_cols.append(colours[skey])
    tp_ax.set_title("throughput, print('hello'), one connection / N processes", fontsize=10)
    if bars:
        ys = range(len(bars))[::-1]
        tp_ax.barh(list(ys), widths, color=bar_cols, alpha=0.7)
        tp_ax.set_yticks(list(ys), bars, fontsize=8)
        tp_ax.set_xscale("log")
        tp_ax.set_xlabel("runs/s (log)", fontsize=8)
        _plain_log_ticks(tp_ax)
    for ax in flat[n_panels:]:
        ax.set_axis_off()
    fig.suptitle(f"mcp-python-exec-sandbox vs per-call baselines\n{machine_line(results['machine'])}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return None


def _plain_log_ticks(ax) -> None:
    """Log axes labelled 0.5, 1, 2, 5, 10 ... instead of powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def print_summary(results: dict, printer) -> None:
    printer("")
    printer("targets (informational; the harness never fails on them):")
    for t in results.get("targets", []):
        printer(f"  {t['what']:<50} goal {t['target']:<14} measured {t['measured']:<14} {t['status']}")
    if results.get("floor_targets"):
        printer("floor targets (issue 19, ratios in this run; informational):")
        for t in results["floor_targets"]:
            printer(f"  {t['status']:<4} {t['what']}: {t['measured']}")
