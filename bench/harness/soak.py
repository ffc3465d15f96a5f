"""Soak: many mixed runs through one server, sampling the resources of its process tree.

The mix (hello, output, exception, timeout, cancel, dependency reuse, a step of one long-lived
session) goes through one server with a few calls in flight. Every `sample_every` runs the
harness lets the server go quiet (no call in flight, the process tree unchanged for a moment)
and samples: server and zygote RSS, open fds, threads and processes of the whole tree. Quiet
samples are comparable: whatever a run leaves behind shows up in them.

The verdict compares the end with the warm-up (the samples of the first `warmup_fraction` of the
runs): RSS may grow by at most a stated bound, fds, threads and processes not at all. Any wrong
result, lost answer or server exit fails the soak too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from typing import Optional

from harness.client import HarnessError, McpServer, ServerExited, tool_outcome
from harness.memory import descendants

# The stated bounds (README: "Soak").
RSS_GROWTH_BOUND_KB = 16 * 1024      # server, and the zygotes together, each
COUNT_GROWTH_BOUND = 0               # fds, threads, processes at quiet points

# Share of each kind of run in the mix.
MIX = [("hello", 0.49), ("output", 0.14), ("exception", 0.14), ("deps", 0.14), ("step", 0.06),
       ("cancel", 0.02), ("timeout", 0.01)]

OUTPUT_BYTES = 64 * 1024
HELLO = 'print("hello")\n'
OUTPUT = f'import sys\nsys.stdout.write("x" * {OUTPUT_BYTES - 1} + "\\n")\n'
EXCEPTION = 'raise ValueError("soak")\n'
SLEEP = 'import time\ntime.sleep(60)\n'
# A step of the soak's session: its value counts the steps the session has kept.
STEP = "n = globals().get('n', 0) + 1\nn\n"
DEPS = ('# /// script\n# dependencies = ["mpes-soak-leaf"]\n# ///\n'
        'import mpes_soak_leaf\nprint(mpes_soak_leaf.VERSION)\n')
CALL_DEADLINE_S = 120.0
CANCEL_AFTER_S = 0.1


def write_wheel(directory: str) -> None:
    """A one-module wheel (mpes_soak_leaf 1.0) for the dependency runs, installed offline."""
    dist = "mpes_soak_leaf-1.0.dist-info"
    entries = {
        "mpes_soak_leaf/__init__.py": b"VERSION = '1.0'\n",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: mpes-soak-leaf\nVersion: 1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: mpes-soak\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    entries[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(directory, "mpes_soak_leaf-1.0-py3-none-any.whl"), "w") as z:
        for path, data in entries.items():
            z.writestr(path, data)


def choose_kinds(runs: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    names = [name for name, _ in MIX]
    weights = [w for _, w in MIX]
    return rng.choices(names, weights, k=runs)


def arguments(kind: str, session_id: Optional[str] = None) -> dict:
    if kind == "step":
        return {"script": STEP, "session_id": session_id}
    if kind == "hello":
        return {"script": HELLO}
    if kind == "output":
        return {"script": OUTPUT}
    if kind == "exception":
        return {"script": EXCEPTION}
    if kind == "deps":
        return {"script": DEPS}
    if kind == "timeout":
        return {"script": SLEEP, "timeout_seconds": 1}
    if kind == "cancel":
        return {"script": SLEEP, "timeout_seconds": 60}
    raise ValueError(kind)


def check(kind: str, outcome: dict) -> Optional[str]:
    """Why the answer to a `kind` run is wrong, or None."""
    sc = outcome.get("structured") or {}
    code, out, err = outcome["exit_code"], outcome["stdout"], outcome["stderr"]
    if kind == "hello":
        ok = code == 0 and out == "hello\n"
    elif kind == "output":
        ok = code == 0 and len(out) == OUTPUT_BYTES
    elif kind == "exception":
        ok = code == 1 and "ValueError: soak" in err
    elif kind == "deps":
        ok = code == 0 and out == "1.0\n"
    elif kind == "timeout":
        ok = sc.get("end_reason") == "timeout"
    elif kind == "step":
        kept = (sc.get("session") or {}).get("kept") is True
        ok = code == 0 and kept and step_value(outcome) is not None
    else:  # cancel: answered before the cancellation went out; any ending is fine
        ok = True
    if ok:
        return None
    return f"{kind}: exit_code={code} end={sc.get('end_reason')} stdout={out[:120]!r} stderr={err[-300:]!r}"


def step_value(outcome: dict) -> Optional[int]:
    """The count a step of the soak's session returned, or None."""
    repr_ = ((outcome.get("structured") or {}).get("return_value") or {}).get("repr", "")
    return int(repr_) if isinstance(repr_, str) and repr_.isdigit() else None


# ---- sampling --------------------------------------------------------------------------------

def _read(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _status_field(status: str, key: str) -> int:
    for line in status.splitlines():
        if line.startswith(key + ":"):
            parts = line.split()
            if len(parts) > 1 and parts[1].isdigit():
                return int(parts[1])
    return 0


def _fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _is_zygote_program(pid: int) -> bool:
    argv0 = os.path.basename((_read(f"/proc/{pid}/cmdline") or "").split("\0")[0])
    return argv0 == "zygote" or argv0.endswith("-zygote")


def _ppid(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat") or ""
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def _is_zygote(pid: int) -> bool:
    """A zygote itself, not one of its forks (runs and spares carry the same command line)."""
    return _is_zygote_program(pid) and not _is_zygote_program(_ppid(pid))


def sample(server_pid: int, runs_done: int, t0: float) -> dict:
    """The tree's resources now."""
    pids = descendants(server_pid)
    out = {"runs": runs_done, "t": round(time.monotonic() - t0, 3), "processes": len(pids),
           "server_rss_kb": 0, "server_anon_kb": 0, "server_file_kb": 0,
           "server_fds": 0, "server_threads": 0, "zygotes": 0,
           "zygote_rss_kb": 0, "zygote_fds": 0, "tree_threads": 0, "tree_fds": 0}
    for pid in pids:
        status = _read(f"/proc/{pid}/status")
        if status is None:
            continue
        threads = _status_field(status, "Threads")
        fds = _fd_count(pid)
        out["tree_threads"] += threads
        out["tree_fds"] += fds
        if pid == server_pid:
            out["server_rss_kb"] = _status_field(status, "VmRSS")
            # Of it: its own memory (heap, stacks), and pages of files it maps (its libraries'
            # code, shared with every process that maps them).
            out["server_anon_kb"] = _status_field(status, "RssAnon")
            out["server_file_kb"] = _status_field(status, "RssFile")
            out["server_fds"] = fds
            out["server_threads"] = threads
        elif _is_zygote(pid):
            out["zygotes"] += 1
            out["zygote_rss_kb"] += _status_field(status, "VmRSS")
            out["zygote_fds"] += fds
    return out


def quiet_sample(server_pid: int, runs_done: int, t0: float, timeout: float = 5.0) -> dict:
    """A sample once the tree has stopped changing for a moment (spares re-forked, runs reaped)."""
    deadline = time.monotonic() + timeout
    last = None
    stable = 0
    while True:
        s = sample(server_pid, runs_done, t0)
        key = (s["processes"], s["tree_fds"], s["tree_threads"])
        stable = stable + 1 if key == last else 0
        last = key
        if stable >= 3 or time.monotonic() > deadline:
            return s
        time.sleep(0.1)


# ---- verdict ---------------------------------------------------------------------------------

COUNTS = ("server_fds", "server_threads", "tree_fds", "tree_threads", "processes", "zygotes")
SIZES = ("server_rss_kb", "zygote_rss_kb")
# What the server's RSS is made of: shown with its growth, not judged (the RSS bound covers both).
PARTS = ("server_anon_kb", "server_file_kb")


def verdict(samples: list[dict], runs: int, warmup_fraction: float = 0.1) -> dict:
    """Growth from the warm-up to the end, against the bounds. `ok` False names what grew."""
    if len(samples) < 2:
        return {"ok": False, "problems": ["fewer than two samples"], "growth": {}}
    warm_end = max(1, int(runs * warmup_fraction))
    warm = [s for s in samples if s["runs"] <= warm_end] or samples[:1]
    # The end: the last tenth of the samples (at least one).
    tail = samples[-max(1, len(samples) // 10):]
    growth: dict[str, int] = {}
    problems: list[str] = []

    def grow(key: str) -> tuple[int, int]:  # (after warm-up, at the end); growth recorded
        base, end = max(s[key] for s in warm), min(s[key] for s in tail)
        growth[key] = end - base
        return base, end

    for key in SIZES:
        base, end = grow(key)
        if end - base > RSS_GROWTH_BOUND_KB:
            problems.append(f"{key} grew by {end - base} KiB (bound {RSS_GROWTH_BOUND_KB} KiB): "
                            f"{base} after warm-up, {end} at the end")
    for key in PARTS:
        if all(key in s for s in warm + tail):
            grow(key)
    for key in COUNTS:
        base, end = grow(key)
        if end - base > COUNT_GROWTH_BOUND:
            problems.append(f"{key} grew from {base} after warm-up to {end} at the end")
    return {"ok": not problems, "problems": problems, "growth": growth,
            "warmup_runs": warm_end, "bounds": {"rss_kb": RSS_GROWTH_BOUND_KB,
                                                "counts": COUNT_GROWTH_BOUND}}


# ---- the run ---------------------------------------------------------------------------------

@dataclass
class _InFlight:
    kind: str
    sent: float
    cancel_at: Optional[float] = None


@dataclass
class SoakResult:
    runs: int
    seconds: float
    samples: list[dict]
    kinds: dict[str, int]
    wrong: list[str] = field(default_factory=list)
    lost: int = 0


def soak(server_argv: list[str], runs: int, concurrency: int, sample_every: int, out_dir: str,
         seed: int = 20, progress=None) -> SoakResult:
    """Runs the soak; `progress(sample, result)` is called after every quiet sample."""
    work = tempfile.mkdtemp(prefix="mpes-soak-")
    os.chmod(work, 0o755)  # the installer runs unprivileged when the server is root
    try:
        wheels = os.path.join(work, "wheels")
        cache = os.path.join(work, "cache")
        os.makedirs(wheels)
        os.makedirs(cache)
        for d in (wheels, cache):
            os.chmod(d, 0o755)
        write_wheel(wheels)
        argv = server_argv + ["--find-links", wheels, "--offline", "--cache-dir", cache,
                              "--zygote-idle-seconds", "86400"]
        server = McpServer(argv, dict(os.environ), os.path.join(out_dir, "soak-server.stderr"))
        try:
            server.initialize()
            return _drive(server, runs, concurrency, sample_every, seed, progress)
        finally:
            server.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _drive(server: McpServer, runs: int, concurrency: int, sample_every: int, seed: int,
           progress) -> SoakResult:
    kinds = choose_kinds(runs, seed)
    # One session for the whole soak: its steps queue behind each other in the server, so each
    # answer's count is the one before it plus one (a step lost or run twice shows).
    created = tool_outcome(server.call_tool("create_session", {}, timeout=CALL_DEADLINE_S))
    session_id = (created.get("structured") or {}).get("session_id")
    if not session_id:
        raise HarnessError(f"the soak's session could not be created: {created['text'][:300]}")
    last_step = 0
    counts: dict[str, int] = {}
    t0 = time.monotonic()
    result = SoakResult(runs, 0.0, [], counts)
    result.samples.append(quiet_sample(server.proc.pid, 0, t0))
    inflight: dict[int, _InFlight] = {}
    submitted = done = 0
    next_sample = sample_every
    while done < runs:
        limit = min(runs, next_sample)
        while len(inflight) < concurrency and submitted < limit:
            kind = kinds[submitted]
            submitted += 1
            rid = server.send_request("tools/call", {"name": "execute_python",
                                                     "arguments": arguments(kind, session_id)})
            now = time.monotonic()
            inflight[rid] = _InFlight(kind, now, now + CANCEL_AFTER_S if kind == "cancel" else None)
        try:
            answered = server.pump(0.05)
        except ServerExited as e:
            raise HarnessError(f"the server went away after {done} runs: {e}") from e
        now = time.monotonic()
        for rid in answered:
            job = inflight.pop(rid, None)
            resp = server.take(rid)
            if job is None or resp is None:
                continue
            done += 1
            counts[job.kind] = counts.get(job.kind, 0) + 1
            outcome = tool_outcome(resp)
            why = check(job.kind, outcome)
            if not why and job.kind == "step":
                value = step_value(outcome)
                if value != last_step + 1:
                    why = f"step: the session counted {value} after {last_step}"
                if value is not None:
                    last_step = value
            if why and len(result.wrong) < 50:
                result.wrong.append(why)
            elif why:
                result.wrong.append("...")
        for rid, job in list(inflight.items()):
            if job.cancel_at is not None and now >= job.cancel_at:
                server.send_notification("notifications/cancelled",
                                         {"requestId": rid, "reason": "soak"})
                server.abandon(rid)
                del inflight[rid]
                done += 1
                counts["cancel"] = counts.get("cancel", 0) + 1
            elif now - job.sent > CALL_DEADLINE_S:
                server.abandon(rid)
                del inflight[rid]
                done += 1
                result.lost += 1
                result.wrong.append(f"{job.kind}: no answer within {CALL_DEADLINE_S:.0f} s")
        if done >= next_sample and not inflight:
            s = quiet_sample(server.proc.pid, done, t0)
            result.samples.append(s)
            if progress:
                result.seconds = time.monotonic() - t0
                progress(s, result)
            next_sample = min(runs, next_sample + sample_every)
            if done >= runs:
                break
    if result.samples[-1]["runs"] != done:
        result.samples.append(quiet_sample(server.proc.pid, done, t0))
    result.seconds = time.monotonic() - t0
    return result


# ---- report ----------------------------------------------------------------------------------

def write_chart(samples: list[dict], path: str, title: str) -> Optional[str]:
    """SVG (and a PNG beside it) of the curves; returns why not when matplotlib is unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"matplotlib is not available ({e}); install python3-matplotlib for the chart"
    matplotlib.rcParams["svg.hashsalt"] = "mpes-soak"
    matplotlib.rcParams["svg.fonttype"] = "none"
    runs = [s["runs"] for s in samples]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        (axes[0][0], "RSS (MiB)", [("server", "server_rss_kb", 1024), ("zygotes", "zygote_rss_kb", 1024)]),
        (axes[0][1], "open fds", [("server", "server_fds", 1), ("whole tree", "tree_fds", 1)]),
        (axes[1][0], "threads", [("server", "server_threads", 1), ("whole tree", "tree_threads", 1)]),
        (axes[1][1], "processes", [("whole tree", "processes", 1), ("zygotes", "zygotes", 1)]),
    ]
    for ax, label, series in panels:
        for name, key, div in series:
            ax.plot(runs, [s[key] / div for s in samples], label=name, linewidth=1.2)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("runs completed (quiet samples)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    fig.savefig(os.path.splitext(path)[0] + ".png", format="png", dpi=90)
    plt.close(fig)
    return None


def markdown(result: SoakResult, v: dict, chart_note: Optional[str]) -> str:
    first, last = result.samples[0], result.samples[-1]
    done = last["runs"]
    lines = [f"# Soak: {done} runs in {result.seconds:.0f} s "
             f"({done / max(result.seconds, 1e-9):.0f} runs/s)"
             + ("" if done == result.runs else f" (of {result.runs} planned)"), "",
             "Mix: " + ", ".join(f"{k} {n}" for k, n in sorted(result.kinds.items())), "",
             f"Verdict: {'PASS' if v['ok'] and not result.wrong else 'FAIL'} "
             f"(bounds: RSS +{RSS_GROWTH_BOUND_KB // 1024} MiB after the warm-up of "
             f"{v.get('warmup_runs', '?')} runs; fds, threads, processes +{COUNT_GROWTH_BOUND})", "",
             "| quiet sample | start | end | growth after warm-up |", "|---|---|---|---|"]
    for key in SIZES + PARTS + COUNTS:
        if key in first and key in last:
            lines.append(f"| {key} | {first[key]} | {last[key]} | {v['growth'].get(key, '')} |")
    lines.append("")
    for p in v["problems"]:
        lines.append(f"- growth: {p}")
    if result.lost:
        lines.append(f"- {result.lost} calls got no answer")
    for w in result.wrong[:20]:
        lines.append(f"- wrong result: {w}")
    if chart_note:
        lines.append(f"- chart: {chart_note}")
    return "\n".join(lines) + "\n"
