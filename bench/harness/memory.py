"""Memory of a process tree, read from /proc.

RSS counts every resident page a process maps, shared or not, so summing it over a zygote and its
forked children counts shared pages many times. PSS divides each shared page among the processes
mapping it, so PSS sums add up to what the tree really costs; it comes from smaps_rollup.
"""

from __future__ import annotations

import os
import time
from typing import Optional


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _ppid(pid: int) -> Optional[int]:
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    # The command name sits in parentheses and may itself contain spaces or parentheses.
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def descendants(root: int) -> list[int]:
    """`root` and every process below it, parents before children."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        parent = _ppid(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop(0)
        if _read(f"/proc/{pid}/stat") is None and pid != root:
            continue
        out.append(pid)
        todo.extend(sorted(children.get(pid, [])))
    return out


def _kb_fields(text: str, names: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in names:
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[key] = int(parts[0])
    return out


def process_memory(pid: int) -> Optional[dict]:
    """pid, parent, name, rss_kb, pss_kb (None when smaps_rollup is not readable); None if gone."""
    status = _read(f"/proc/{pid}/status")
    if status is None:
        return None
    name = (_read(f"/proc/{pid}/comm") or "?").strip()
    cmdline = (_read(f"/proc/{pid}/cmdline") or "").split("\0")
    argv0 = os.path.basename(cmdline[0]) if cmdline and cmdline[0] else name
    rss = _kb_fields(status, ("VmRSS",)).get("VmRSS", 0)
    pss: Optional[int] = None
    rollup = _read(f"/proc/{pid}/smaps_rollup")
    if rollup is not None:
        fields = _kb_fields(rollup, ("Rss", "Pss"))
        if "Pss" in fields:
            pss = fields["Pss"]
            rss = fields.get("Rss", rss)
    return {"pid": pid, "ppid": _ppid(pid), "name": name, "argv0": argv0,
            "rss_kb": rss, "pss_kb": pss}


def tree_memory(root: int) -> dict:
    """Every process of the tree with its memory, and the totals."""
    procs = [m for m in (process_memory(p) for p in descendants(root)) if m is not None]
    pss_known = all(p["pss_kb"] is not None for p in procs)
    return {
        "processes": procs,
        "count": len(procs),
        "total_rss_kb": sum(p["rss_kb"] for p in procs),
        "total_pss_kb": sum(p["pss_kb"] for p in procs) if pss_known else None,
    }


def new_branches(before: list[dict], now: list[int]) -> int:
    """How many processes in `now` are new children of a process in `before`: each run the
    server starts is one such branch (a fork of a zygote), whatever it forks below itself."""
    old = {p["pid"] for p in before}
    return sum(1 for pid in now if pid not in old and _ppid(pid) in old)


def _settle(root: int, timeout: float, quiet: float, ready=lambda pids: True) -> None:
    """Polls the tree until `ready(pids)` holds and nothing has changed for `quiet` seconds (or
    `timeout` passes)."""
    deadline = time.monotonic() + timeout
    last = descendants(root)
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = descendants(root)
        if now != last:
            last, stable_since = now, time.monotonic()
        elif ready(now) and time.monotonic() - stable_since >= quiet:
            return


def settled_tree_memory(root: int, timeout: float = 5.0, quiet: float = 0.3) -> dict:
    """The tree's memory once it has stopped changing for `quiet` seconds: after a run, the
    spare that replaces the one it took is forked (a server's idle tree holds its whole pool)."""
    _settle(root, timeout, quiet)
    return tree_memory(root)


def wait_for_branches(root: int, idle: dict, branches: int, timeout: float,
                      quiet: float = 0.3) -> dict:
    """Polls the tree until `branches` new branches hang below the `idle` tree's processes and
    nothing has changed for `quiet` seconds (or `timeout` passes); its memory then, with
    `branches_seen`."""
    _settle(root, timeout, quiet, lambda now: new_branches(idle["processes"], now) >= branches)
    out = tree_memory(root)
    out["branches_seen"] = new_branches(idle["processes"], [p["pid"] for p in out["processes"]])
    return out
