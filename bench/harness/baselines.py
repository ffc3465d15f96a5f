"""The architecture this server replaces, run per call on the same scripts.

- bwrap+python: a fresh `bwrap <the Python server's profile> /usr/bin/python3 script.py` per call,
  the Python server without uv's own overhead (so the ratio to it is conservative);
- python: a fresh `/usr/bin/python3 script.py`, no sandbox at all;
- uv: `uv run --script script.py` per call, when uv is installed;
- docker run: a fresh container per call (`docker run --rm IMAGE python3 script.py`, the Python
  server's docker mode), when a daemon answers and the docker backend's image is there
  (scripts/build-image.sh). Measure the server's own docker backend next to it with
  `bench/run.sh --server-arg=--sandbox-backend=docker`.
Each latency runs from just before the process is spawned to its output read and exit reaped.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from harness.stats import summarize_ns
from harness.workloads import Workload

PYTHON = "/usr/bin/python3"
DOCKER_IMAGE = os.environ.get("MPES_DOCKER_IMAGE", "mcp-python-exec-sandbox:bookworm")

# The minimal environment a run gets from the server too, so no host variable (PYTHONPATH, a
# pyenv shim first on PATH) changes what the baselines do.
_BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
             "PYTHONIOENCODING": "utf-8", "MPLBACKEND": "Agg"}


def _bwrap_profile() -> list[str]:
    """The Python server's bubblewrap profile: everything unshared, a read-only system, fresh
    /proc, /dev and /tmp. Plus a new session, and the two /etc entries Debian's numpy needs to
    find libblas (without them the numpy script cannot run at all)."""
    argv = ["--unshare-all", "--die-with-parent", "--new-session"]
    for path in ("/usr", "/lib", "/lib64", "/bin", "/sbin"):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path in ("/etc/resolv.conf", "/etc/ssl", "/etc/alternatives", "/etc/ld.so.cache"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    return argv


@dataclass
class Baseline:
    key: str
    title: str
    available: bool
    unavailable_reason: str = ""
    version: str = ""
    prefix: list[str] = field(default_factory=list)

    def argv(self, workload: Workload, script_path: str) -> list[str]:
        script_dir = os.path.dirname(script_path)
        if self.key == "bwrap":
            return (self.prefix + ["--bind", script_dir, script_dir, "--chdir", script_dir,
                                    PYTHON, script_path])
        if self.key == "docker":
            return (self.prefix + ["--mount", f"type=bind,source={script_dir},target=/work,readonly",
                                   "--workdir", "/work", DOCKER_IMAGE, PYTHON, "/work/script.py"])
        if self.key == "uv":
            argv = self.prefix + ["run", "--no-project", "--python", PYTHON]
            for dep in workload.dependencies:
                argv += ["--with", dep]
            return argv + ["--script", script_path]
        return [PYTHON, script_path]


def _version_of(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def discover(uv_path: str = "uv") -> list[Baseline]:
    """Every baseline, with the reason when one cannot run on this host."""
    out: list[Baseline] = []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        out.append(Baseline("bwrap", "bwrap+python (per call)", False,
                            "bwrap not found (apt-get install bubblewrap)"))
    else:
        b = Baseline("bwrap", "bwrap+python (per call)", True, version=_version_of([bwrap, "--version"]),
                     prefix=[bwrap] + _bwrap_profile())
        probe = subprocess.run(b.prefix + [PYTHON, "-c", "pass"], capture_output=True, text=True)
        if probe.returncode != 0:
            b.available = False
            b.unavailable_reason = f"bwrap cannot start a sandbox here: {probe.stderr.strip()[:300]}"
        out.append(b)
    if os.access(PYTHON, os.X_OK):
        out.append(Baseline("python", "python (per call, no sandbox)", True,
                            version=_version_of([PYTHON, "--version"])))
    else:
        out.append(Baseline("python", "python (per call, no sandbox)", False, f"{PYTHON} not found"))
    uv = shutil.which(uv_path)
    if uv is None:
        out.append(Baseline("uv", "uv run --script (per call)", False,
                            f"uv not found ({uv_path!r} is not on PATH)"))
    else:
        out.append(Baseline("uv", "uv run --script (per call)", True,
                            version=_version_of([uv, "--version"]), prefix=[uv]))
    out.append(_docker_baseline())
    return out


def _docker_baseline() -> Baseline:
    title = "docker run (per call)"
    docker = shutil.which("docker")
    if docker is None:
        return Baseline("docker", title, False, "docker not found (apt-get install docker.io)")
    try:
        server = subprocess.run([docker, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                                text=True, timeout=30)
        image = subprocess.run([docker, "image", "inspect", DOCKER_IMAGE], capture_output=True, text=True,
                               timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return Baseline("docker", title, False, f"docker does not answer: {e}")
    if server.returncode != 0:
        return Baseline("docker", title, False, f"no docker daemon: {server.stderr.strip()[:200]}")
    if image.returncode != 0:
        return Baseline("docker", title, False, f"no image {DOCKER_IMAGE} (scripts/build-image.sh)")
    # The Python server's container per call: no network, read-only, no capabilities.
    return Baseline("docker", title, True, version="docker " + server.stdout.strip(),
                    prefix=[docker, "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
                            "--tmpfs", "/tmp"])


@dataclass
class CallResult:
    latency_ns: int
    error: Optional[str]


class ScriptFiles:
    """One directory per workload holding its script.py, under a private temporary root."""

    def __init__(self, root: str):
        self.root = root

    def path_for(self, workload: Workload) -> str:
        d = os.path.join(self.root, workload.key)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "script.py")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(workload.script)
        return path


def run_once(baseline: Baseline, workload: Workload, files: ScriptFiles) -> CallResult:
    script = files.path_for(workload)
    argv = baseline.argv(workload, script)
    env = dict(_BASE_ENV, HOME=os.path.dirname(script), TMPDIR="/tmp")
    t0 = time.perf_counter_ns()
    try:
        proc = subprocess.run(argv, cwd=os.path.dirname(script), env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=workload.timeout_seconds)
    except subprocess.TimeoutExpired:
        return CallResult(time.perf_counter_ns() - t0, f"timed out after {workload.timeout_seconds} s")
    t1 = time.perf_counter_ns()
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    return CallResult(t1 - t0, workload.check(stdout, stderr, proc.returncode))


class BaselineSeries:
    """The measured calls of one workload on one baseline, taken in slices like the server's
    (see server_runs.ServerSeries), under the same time budget."""

    def __init__(self, baseline: Baseline, workload: Workload, files: ScriptFiles, target: int,
                 budget_s: float = math.inf, min_calls: int = 3):
        self.baseline = baseline
        self.workload = workload
        self.files = files
        self.target = target
        self.budget_s = budget_s
        self.min_calls = min_calls
        self.calls: list[CallResult] = []
        self.cut_short = False
        self._measuring_s = 0.0

    @property
    def done(self) -> bool:
        return self.cut_short or len(self.calls) >= self.target

    def warm(self) -> None:
        run_once(self.baseline, self.workload, self.files)  # page cache, script file

    def measure(self, calls: int) -> None:
        for _ in range(calls):
            if self.done:
                return
            if self._measuring_s > self.budget_s and len(self.calls) >= self.min_calls:
                self.cut_short = True
                return
            t0 = time.monotonic()
            self.calls.append(run_once(self.baseline, self.workload, self.files))
            self._measuring_s += time.monotonic() - t0
            if self.workload.pause_s:
                time.sleep(self.workload.pause_s)

    def result(self) -> dict:
        out = summarize(self.calls)
        out["cut_short_by_budget"] = self.cut_short
        return out


def summarize(calls: list[CallResult]) -> dict:
    ok = [c.latency_ns for c in calls if c.error is None]
    errors = [c.error for c in calls if c.error is not None]
    return {"latency_ms": summarize_ns(ok), "samples_ms": [s / 1e6 for s in ok],
            "errors": len(errors), "first_error": errors[0] if errors else None}


def run_sequential(baseline: Baseline, workload: Workload, files: ScriptFiles, iterations: int,
                   budget_s: float = math.inf, min_calls: int = 3) -> list[CallResult]:
    """Up to `iterations` calls one after another, fewer once `budget_s` seconds have passed
    (but at least `min_calls`)."""
    series = BaselineSeries(baseline, workload, files, iterations, budget_s, min_calls)
    series.measure(iterations)
    return series.calls


def run_concurrent(baseline: Baseline, workload: Workload, files: ScriptFiles,
                   in_flight: int, total: int,
                   budget_s: float = math.inf) -> tuple[list[CallResult], float]:
    """Up to `total` calls with `in_flight` processes alive at a time (no new ones after
    `budget_s` seconds once 2 × in_flight have finished); the results and the seconds the whole
    batch took."""
    files.path_for(workload)  # written once, before the clock starts
    lock = threading.Lock()
    results: list[CallResult] = []
    started = 0
    t0 = time.perf_counter()

    def worker() -> None:
        nonlocal started
        while True:
            with lock:
                over = time.perf_counter() - t0 > budget_s and len(results) >= 2 * in_flight
                if started >= total or over:
                    return
                started += 1
            r = run_once(baseline, workload, files)
            with lock:
                results.append(r)

    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        for f in [pool.submit(worker) for _ in range(in_flight)]:
            f.result()
    return results, time.perf_counter() - t0
