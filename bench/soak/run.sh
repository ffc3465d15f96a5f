#!/usr/bin/env bash
# Soak: mixed runs through one server, sampling server and zygote RSS, fds, threads and the
# process count of the whole tree; fails when they grow beyond the stated bounds.
#   bench/soak/run.sh [--runs N | --long] [--concurrency K] [--server PATH] [--out DIR]
# Short form (CI): 3,000 runs. --long: 100,000 runs. Debian's /usr/bin/python3 runs it (standard
# library, plus python3-matplotlib for the chart), like bench/run.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 -B -c '
import sys
sys.path.insert(0, sys.argv.pop(1))
from harness.soak_cli import main
sys.exit(main(sys.argv[1:]))
' "$here" "$@"
