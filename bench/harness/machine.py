"""A description of the machine the numbers were measured on."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Optional


def _first_line(argv: list[str]) -> Optional[str]:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def _cpuinfo_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> Optional[float]:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1 << 20)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.partition("=")[2].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def load_average() -> Optional[list[float]]:
    """1, 5 and 15 minute load averages: other work on the machine skews every number."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def describe(repo_root: str) -> dict:
    bwrap = shutil.which("bwrap")
    git = shutil.which("git")
    commit = None
    if git:
        commit = _first_line([git, "-C", repo_root, "rev-parse", "--short", "HEAD"])
        dirty = _first_line([git, "-C", repo_root, "status", "--porcelain", "--untracked-files=no"])
        if commit and dirty:
            commit += " (with uncommitted changes)"
    return {
        "cpu_model": _cpuinfo_model(),
        "cores": os.cpu_count(),
        "memory_gib": _mem_total_gib(),
        "os": _os_name(),
        "kernel": platform.release(),
        "python_baselines": _first_line(["/usr/bin/python3", "--version"]),
        "bwrap": _first_line([bwrap, "--version"]) if bwrap else "not found",
        "uid": os.getuid(),
        "commit": commit,
        "load_average_start": load_average(),
    }
