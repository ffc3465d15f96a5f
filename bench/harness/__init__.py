"""Benchmark harness for mcp-python-exec-sandbox (run it through bench/run.sh)."""
