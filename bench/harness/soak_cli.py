"""bench/soak/run.sh: argument parsing, the run, the report files and the exit status."""

from __future__ import annotations

import argparse
import json
import os
import sys

from harness.client import HarnessError
from harness.soak import markdown, soak, verdict, write_chart

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHORT_RUNS = 3000
LONG_RUNS = 100_000


def write_reports(out: str, result, runs: int, concurrency: int, partial: bool = False):
    """soak.json, soak.md and soak.svg in `out`; returns the verdict and the markdown."""
    done = result.samples[-1]["runs"]
    v = verdict(result.samples, done)
    title = f"soak: {done} of {runs} runs, concurrency {concurrency}" + (" (in progress)" if partial else "")
    note = write_chart(result.samples, os.path.join(out, "soak.svg"), title)
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump({"runs": runs, "done": done, "partial": partial, "seconds": result.seconds,
                   "kinds": result.kinds, "verdict": v, "wrong": result.wrong, "lost": result.lost,
                   "samples": result.samples}, f, indent=1)
    report = markdown(result, v, note)
    with open(os.path.join(out, "soak.md"), "w") as f:
        f.write(report)
    return v, report


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/soak/run.sh", description=__doc__)
    p.add_argument("--runs", type=int, help=f"runs in all (default {SHORT_RUNS}; --long: {LONG_RUNS})")
    p.add_argument("--long", action="store_true", help=f"the long form: {LONG_RUNS} runs")
    p.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    p.add_argument("--samples", type=int,
                   help="quiet samples over the soak (default 30; --long: 100); each waits for the tree to settle")
    p.add_argument("--server", default=os.path.join(REPO_ROOT, "build", "mcp-python-exec-sandbox"))
    p.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                   help="extra server argument (repeatable)")
    p.add_argument("--out", default=os.path.join(REPO_ROOT, "bench", "results", "soak"))
    p.add_argument("--seed", type=int, default=20)
    a = p.parse_args(argv)
    runs = a.runs or (LONG_RUNS if a.long else SHORT_RUNS)
    if a.samples is None:
        a.samples = 100 if a.long else 30
    if runs < 10 or a.concurrency < 1 or a.samples < 2:
        p.error("need --runs >= 10, --concurrency >= 1, --samples >= 2")
    os.makedirs(a.out, exist_ok=True)
    every = max(1, runs // a.samples)

    def progress(s: dict, partial) -> None:
        # A checkpoint after every sample: a soak stopped early still leaves its curves.
        if len(partial.samples) % 5 == 0:
            write_reports(a.out, partial, runs, a.concurrency, partial=True)
        print(f"soak: {s['runs']:>7} runs {s['t']:>8.0f} s  server {s['server_rss_kb'] / 1024:6.1f} MiB "
              f"zygotes {s['zygote_rss_kb'] / 1024:6.1f} MiB  fds {s['tree_fds']:>4}  "
              f"threads {s['tree_threads']:>3}  processes {s['processes']:>3}", file=sys.stderr, flush=True)

    try:
        result = soak([a.server, *a.server_arg], runs, a.concurrency, every, a.out, a.seed, progress)
    except HarnessError as e:
        print(f"soak: FAILED: {e}", file=sys.stderr)
        return 1
    v, report = write_reports(a.out, result, runs, a.concurrency)
    print(report, file=sys.stderr)
    ok = v["ok"] and not result.wrong and not result.lost
    print(f"soak: {'PASS' if ok else 'FAIL'}", file=sys.stderr)
    return 0 if ok else 1
