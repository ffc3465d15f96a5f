"""Where the CPU goes while the server runs calls: the whole machine's busy time (from
/proc/stat), this client's own (getrusage), the server process's (all its threads, from
/proc/PID/stat), and its zygotes' with everything they forked (spares, runs, session steps:
every process named `zygote` under the server, each with the CPU of the children it reaped, so
that a process that ended is counted once, in its parent); the rest is what else the calls cost:
the network agent, pasta, bubblewrap and the kernel's own work (teardown of namespaces and
cgroups). Taken before and after a batch, it says per call how much of a throughput target's CPU
budget each part spends. Other load on the machine counts in the rest too: read it on an idle
machine. The floor's CPU per run (harness/floor.py) is read the same way, around its batches, so
that the two are compared like for like.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Optional

from harness.memory import descendants

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Snapshot:
    machine_busy_s: float  # every CPU's time not idle nor waiting for I/O, since boot
    client_s: float        # this process (user + system)
    server_s: Optional[float]  # the server process (user + system), None when unreadable
    zygotes_s: float = 0.0     # the zygote processes with the children they reaped


def machine_busy_s() -> float:
    """Every CPU's busy time since boot, in seconds (the floor's batches are read with it too)."""
    with open("/proc/stat") as stat:
        f = [int(x) for x in stat.readline().split()[1:]]
    # user, nice, system, irq, softirq (guest time is in user already; idle, iowait and the
    # time the hypervisor stole are not this machine's work)
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / _TICK


def _stat(pid: int) -> Optional[tuple[str, list[str]]]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:].split()


def _process_s(pid: int) -> Optional[float]:
    st = _stat(pid)
    return None if st is None else (int(st[1][11]) + int(st[1][12])) / _TICK  # utime, stime


def _zygotes_s(server_pid: int) -> float:
    total = 0
    for pid in descendants(server_pid):
        st = _stat(pid)
        if st is not None and st[0] == "zygote":
            total += sum(int(x) for x in st[1][11:15])  # utime, stime, cutime, cstime
    return total / _TICK


def own_s() -> float:
    """This process's CPU time (user + system), in seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def snapshot(server_pid: int) -> Snapshot:
    client = own_s()
    return Snapshot(machine_busy_s(), client, _process_s(server_pid), _zygotes_s(server_pid))


def per_call(before: Snapshot, after: Snapshot, calls: int) -> Optional[dict]:
    """Milliseconds of CPU per call, split: machine, client, server, zygotes (with their spares
    and runs), rest (machine less the others, never below 0). None without calls."""
    if calls <= 0:
        return None
    machine = (after.machine_busy_s - before.machine_busy_s) * 1000 / calls
    client = (after.client_s - before.client_s) * 1000 / calls
    zygotes = (after.zygotes_s - before.zygotes_s) * 1000 / calls
    out = {"calls": calls, "machine_ms": machine, "client_ms": client, "server_ms": None,
           "zygotes_ms": zygotes}
    known = client + zygotes
    if before.server_s is not None and after.server_s is not None:
        out["server_ms"] = (after.server_s - before.server_s) * 1000 / calls
        known += out["server_ms"]
    out["rest_ms"] = max(0.0, machine - known)
    return out


def text(split: Optional[dict]) -> str:
    if not split:
        return "not measured"
    server = f"{split['server_ms']:.2f}" if split.get("server_ms") is not None else "—"
    return (f"{split['machine_ms']:.2f} ms of CPU per call on the whole machine: the client "
            f"{split['client_ms']:.2f}, the server process {server}, the zygotes with their spares "
            f"and runs {split.get('zygotes_ms', 0.0):.2f}, the rest (network agent, pasta, kernel) "
            f"{split['rest_ms']:.2f}")
