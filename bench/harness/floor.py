"""The floor: what a sandboxed run costs at the least on this machine, measured in the same session.

`mpes-bench-floor` (bench/floor/, built next to the server) embeds the server's interpreter as the
zygote does, inside the zygote's own bubblewrap sandbox, and per run clones one child into the
run's namespaces with its tmpfs mounts and /proc, runs the code, reads its stdout to EOF and reaps
it. Nothing else: no protocol, no second process, no identity change, no limits, no seccomp. The
server's workloads are reported as ratios to it, so that two machines whose memory costs differ
tenfold can be compared; `--page-touch` says what memory costs here.

One long-lived floor process per workload takes batches of runs on request (a line "N" on its
stdin, one JSON line back), so that the floor is measured in slices between the server's and the
baselines' calls, under the same load. Its CPU per run is the whole machine's busy time over those
slices, as the server's CPU per call is read (harness/cpu_use.py), with the floor's processes' own
(getrusage) beside it: see cpu_per_run.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from typing import Optional

from harness import cpu_use
from harness.stats import summarize_ns
from harness.workloads import PANDAS

BINARY = "mpes-bench-floor"


@dataclass(frozen=True)
class FloorWorkload:
    key: str        # the server workload it is the floor of
    title: str
    code: str
    expect: str     # a substring its stdout must hold
    preload: str = ""  # comma-separated modules imported before the runs


HELLO_FLOOR = FloorWorkload(key="hello", title="floor: print(sum(range(1000)))",
                            code="print(sum(range(1000)))\n", expect="499500")
# The server's pandas script, with numpy and pandas imported (and gc-frozen) beforehand, as the
# server's environment zygote has them.
PANDAS_FLOOR = FloorWorkload(key="pandas", title="floor: numpy + pandas, imported beforehand",
                             code=PANDAS.script, expect=PANDAS.expect_stdout[0], preload="numpy,pandas")

FLOORS = {f.key: f for f in (HELLO_FLOOR, PANDAS_FLOOR)}


class FloorError(Exception):
    """The floor program could not start or answer."""


def find_binary(server_path: str, explicit: Optional[str] = None) -> tuple[Optional[str], str]:
    """The floor program (explicit, or next to the server); else None and why."""
    path = explicit or os.path.join(os.path.dirname(os.path.abspath(server_path)), BINARY)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path, ""
    how = "" if explicit else " (it is built with the server: scripts/build.sh)"
    return None, f"no floor program at {path}{how}"


def interpreter_of(check_environment: dict) -> tuple[str, str]:
    """The interpreter and network setting the server's runs use, from its check_environment."""
    engine = ((check_environment or {}).get("structured") or {}).get("engine") or {}
    executable = (engine.get("interpreter") or {}).get("executable") or "/usr/bin/python3"
    network = engine.get("network") if engine.get("network") in ("on", "off") else "on"
    return executable, network


class _Lines:
    """Whole lines from a pipe, with a deadline per line."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(fd, selectors.EVENT_READ)

    def read(self, timeout: float) -> Optional[bytes]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise FloorError(f"no answer from the floor program within {timeout:g} s")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def close(self) -> None:
        self.sel.close()


class FloorProcess:
    """One running floor program for one workload."""

    def __init__(self, binary: str, python: str, workload: FloorWorkload, log_path: str,
                 network: str = "on", env: Optional[dict] = None, start_timeout: float = 120.0):
        self.workload = workload
        self.log = open(log_path, "ab")
        argv = [binary, "--python", python, "--preload", workload.preload, "--code", workload.code,
                "--expect", workload.expect, "--network", network]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log, env=env)
        except OSError as e:
            self.log.close()
            raise FloorError(f"cannot start {binary}: {e}") from e
        self.lines = _Lines(self.proc.stdout.fileno())
        try:
            hello = self._answer(start_timeout)
        except FloorError:
            self.close()
            raise
        self.python_version = hello.get("python")
        # Whether each run got a network namespace of its own, as the server's runs do.
        self.own_network = bool(hello.get("own_network"))

    def _answer(self, timeout: float) -> dict:
        line = self.lines.read(timeout)
        if line is None:
            self.proc.wait(timeout=10)
            raise FloorError(f"the floor program exited with status {self.proc.returncode} "
                             f"(its stderr is in {self.log.name})")
        try:
            answer = json.loads(line)
        except ValueError as e:
            raise FloorError(f"the floor program wrote something that is not JSON: {line[:200]!r}") from e
        if "error" in answer:
            raise FloorError(f"floor: {answer['error']}")
        return answer

    def batch(self, runs: int, timeout: float) -> dict:
        try:
            self.proc.stdin.write(f"{runs}\n".encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise FloorError(f"the floor program is gone: {e}") from e
        return self._answer(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """End of input: the floor program exits; killed if it has not within `timeout`."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.lines.close()
        self.proc.stdout.close()
        self.log.close()


def cpu_per_run(runs: int, own_us: float, machine_s: Optional[float], harness_s: float = 0.0,
                wall_s: Optional[float] = None, cores: Optional[int] = None) -> dict:
    """The floor's CPU per run, in ms, from the counters of its measured batches: `own_us`, the
    floor process's and its reaped runs' (getrusage, in the floor's answers); `machine_s`, every
    CPU's busy time while the batches ran (cpu_use.machine_busy_s, as the server's CPU per call is
    read), of which `harness_s` was the harness's own (it only waits for the answer); `wall_s`, how
    long they ran, on `cores` CPUs.

    The machine-wide figure is the one used, as the server's is: it holds what the runs cost
    outside the floor's processes too, chiefly the kernel's workers tearing their namespaces down,
    which getrusage never sees. It can only be below the floor's own through noise (/proc/stat
    counts in ticks): then the floor's own is used, and `cpu_from` says so. Other load on the
    machine counts in it too; `machine_busy_share`, how busy the CPUs were while the batches ran,
    tells it (on an idle machine one run at a time leaves much of them idle)."""
    if runs <= 0:
        return {"cpu_ms_per_run": None, "own_cpu_ms_per_run": None, "machine_cpu_ms_per_run": None,
                "cpu_from": None, "machine_busy_share": None}
    own = own_us / 1e3 / runs
    machine = None if machine_s is None else max(0.0, machine_s - harness_s) * 1e3 / runs
    from_machine = machine is not None and machine >= own
    share = machine_s / (wall_s * cores) if machine_s is not None and wall_s and cores else None
    return {"cpu_ms_per_run": machine if from_machine else own, "own_cpu_ms_per_run": own,
            "machine_cpu_ms_per_run": machine,
            "cpu_from": "machine" if from_machine else
                        ("own: the machine's reading was lower" if machine is not None else
                         "own: the machine's was not read"),
            "machine_busy_share": share}


# /proc/stat counts each CPU's busy time in ticks (10 ms): each reading of the machine is off by
# up to a tick per CPU, more than ten hello runs cost. So the floor's CPU per run comes from one
# reading of its own, around runs enough to keep the machine busy this long (±2% on 2 CPUs),
# when the measured slices were shorter (bench --quick: 10 runs).
CPU_READING_BUSY_S = 1.0


class FloorSeries:
    """The floor's runs of one workload, taken in slices like the baselines' (same time budget)."""

    def __init__(self, process: FloorProcess, target: int, budget_s: float = math.inf,
                 min_runs: int = 3, run_timeout: float = 60.0, machine_busy_s=cpu_use.machine_busy_s,
                 harness_s=cpu_use.own_s):
        self.process = process
        self.target = target
        self.budget_s = budget_s
        self.min_runs = min_runs
        self.run_timeout = run_timeout
        self.samples: list[int] = []
        self.errors = 0
        self.first_error: Optional[str] = None
        self.runs = 0
        self.cpu_us = 0
        self.minflt = 0
        # The machine's busy time and the harness's own CPU over the measured batches.
        self._machine_busy_s, self._harness_s = machine_busy_s, harness_s
        self.machine_s = 0.0
        self.harness_s = 0.0
        self.wall_s = 0.0
        self.cut_short = False
        self._measuring_s = 0.0
        # measure_cpu's own reading (runs, floor's own µs, machine s, harness s, wall s).
        self.cpu_reading: Optional[tuple[int, int, float, float, float]] = None

    @property
    def done(self) -> bool:
        return self.cut_short or len(self.samples) >= self.target

    def warm(self, runs: int = 3) -> None:
        self.process.batch(runs, self.run_timeout * runs)

    def measure(self, runs: int) -> None:
        if runs <= 0 or self.done:
            return
        if self._measuring_s > self.budget_s and len(self.samples) >= self.min_runs:
            self.cut_short = True
            return
        runs = min(runs, self.target - len(self.samples))
        t0 = time.monotonic()
        m0, h0 = self._machine_busy_s(), self._harness_s()
        b = self.process.batch(runs, self.run_timeout * runs)
        m1, h1 = self._machine_busy_s(), self._harness_s()
        t1 = time.monotonic()
        self._measuring_s += t1 - t0
        self.machine_s += m1 - m0
        self.harness_s += h1 - h0
        self.wall_s += t1 - t0
        self.add(b)

    def measure_cpu(self, busy_s: float = CPU_READING_BUSY_S, max_wall_s: float = 10.0,
                    first_batch: int = 20) -> None:
        """The floor's CPU per run from one reading of the machine around batches of runs (not
        latency samples), until the machine's busy time reached `busy_s` or `max_wall_s` passed;
        nothing when the measured slices already kept it that busy."""
        if self.machine_s >= busy_s:
            return
        runs, own_us, errors = 0, 0, 0
        t0 = time.monotonic()
        m0, h0 = self._machine_busy_s(), self._harness_s()
        batch = first_batch
        while True:
            b = self.process.batch(batch, self.run_timeout * batch)
            runs += b.get("runs", 0)
            own_us += b.get("cpu_us", 0)
            errors += b.get("errors", 0)
            if self.first_error is None and b.get("first_error"):
                self.first_error = b["first_error"]
            busy = self._machine_busy_s() - m0
            wall = time.monotonic() - t0
            if busy >= busy_s or wall >= max_wall_s or not b.get("runs"):
                break
            # Enough for what is left, at what a run has cost so far (ticks: at least the wall's).
            per_run = max(busy, own_us / 1e6, 1e-6) / runs
            batch = max(1, min(2000, int((busy_s - busy) / per_run) + 1))
        self.errors += errors
        self.cpu_reading = (runs, own_us, self._machine_busy_s() - m0, self._harness_s() - h0,
                            time.monotonic() - t0)

    def add(self, b: dict) -> None:
        self.samples.extend(b.get("samples_ns") or [])
        self.runs += b.get("runs", 0)
        self.errors += b.get("errors", 0)
        if self.first_error is None and b.get("first_error"):
            self.first_error = b["first_error"]
        self.cpu_us += b.get("cpu_us", 0)
        self.minflt += b.get("minflt_parent", 0) + b.get("minflt_children", 0)

    def result(self) -> dict:
        return {"latency_ms": summarize_ns(self.samples), "samples_ms": [s / 1e6 for s in self.samples],
                "errors": self.errors, "first_error": self.first_error,
                "cut_short_by_budget": self.cut_short, "runs": self.runs,
                # What the cores must spend per run: the machine's busy time over the batches
                # (cpu_ms_per_run), with the floor's processes' own beside it; from measure_cpu's
                # reading when it took one.
                **(cpu_per_run(*self.cpu_reading, os.cpu_count()) if self.cpu_reading else
                   cpu_per_run(self.runs, self.cpu_us, self.machine_s, self.harness_s, self.wall_s,
                               os.cpu_count())),
                "cpu_runs": self.cpu_reading[0] if self.cpu_reading else self.runs,
                "page_faults_per_run": self.minflt / self.runs if self.runs else None,
                "python_version": self.process.python_version,
                "own_network": self.process.own_network}


@dataclass
class FloorSetup:
    """How this session starts its floor programs."""
    binary: str
    python: str    # the server's interpreter
    network: str   # the server's --network: the runs' namespaces follow it
    log_dir: str
    env: Optional[dict] = None

    def start(self, workload: FloorWorkload) -> "FloorProcess":
        return FloorProcess(self.binary, self.python, workload,
                            os.path.join(self.log_dir, f"floor-{workload.key}.stderr.log"),
                            self.network, self.env)


def page_touch(binary: str, pages: int, repeat: int, timeout: float = 120.0) -> dict:
    """What a fresh page, a copy-on-write fault and a first read after fork cost here (µs)."""
    return _measure(binary, ["--page-touch", "--pages", str(pages), "--repeat", str(repeat)], timeout)


def wake_up(binary: str, samples: int, timeout: float = 120.0) -> dict:
    """What a pipe round trip to a process asleep for 20 ms costs here, on the waker's CPU and
    on another (µs)."""
    return _measure(binary, ["--wake-up", "--samples", str(samples)], timeout)


def _measure(binary: str, args: list[str], timeout: float) -> dict:
    """The floor program's one JSON line for a measurement of the machine, or {"error": ...}."""
    what = args[0].lstrip("-")
    try:
        out = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{what} did not run: {e}"}
    try:
        answer = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"{what} exited with status {out.returncode}: {out.stderr.strip()[:300]}"}
    return answer


def throughput_allowed(cpu_ms_per_run: Optional[float], cores: int) -> Optional[float]:
    """Runs per second the cores could complete if every run cost what a floor run costs."""
    if not cpu_ms_per_run or cpu_ms_per_run <= 0 or cores < 1:
        return None
    return cores * 1000.0 / cpu_ms_per_run
