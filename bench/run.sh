#!/usr/bin/env bash
# Benchmarks the built server over stdio against per-call bwrap+python, python and uv baselines.
#   bench/run.sh [--quick] [--server PATH] [--out DIR]   (--help lists every option)
# Debian's /usr/bin/python3 runs the harness: standard library only, plus python3-matplotlib for
# the chart. The harness directory goes on sys.path without PYTHONPATH, so nothing leaks into the
# server or the baselines it spawns; -B keeps __pycache__ out of the source tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 -B -c '
import sys
sys.path.insert(0, sys.argv.pop(1))
from harness.cli import main
sys.exit(main(sys.argv[1:]))
' "$here" "$@"
