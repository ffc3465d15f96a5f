#!/usr/bin/env bash
# One command: install what is missing, build, and run the MCP server on stdio with the given
# flags (e.g. `scripts/run.sh --network off`), or run one script once with `--run FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >&2
scripts/build.sh >&2
exec build/mcp-python-exec-sandbox "$@"
