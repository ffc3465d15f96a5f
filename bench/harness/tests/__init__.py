"""The harness's own tests (bench/run.sh --self-test; --quick runs them first)."""
