import dataclasses
import os
import tempfile
import time
import unittest

from harness import baselines as bl
from harness.workloads import EXCEPTION, HELLO


class BaselinesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.files = bl.ScriptFiles(self.tmp.name)
        found = {b.key: b for b in bl.discover(uv_path="uv-that-does-not-exist")}
        self.found = found
        self.python = found["python"]
        if not self.python.available:
            self.skipTest(self.python.unavailable_reason)

    def test_uv_missing_is_reported_not_fatal(self):
        self.assertFalse(self.found["uv"].available)
        self.assertIn("not found", self.found["uv"].unavailable_reason)

    def test_bwrap_profile_is_the_python_servers(self):
        b = self.found["bwrap"]
        if not b.available:
            self.skipTest(b.unavailable_reason)
        argv = b.argv(HELLO, self.files.path_for(HELLO))
        for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--proc", "--dev",
                     "--tmpfs"):
            self.assertIn(flag, argv)
        self.assertEqual(argv[-2:], [bl.PYTHON, self.files.path_for(HELLO)])
        self.assertIsNone(bl.run_once(b, HELLO, self.files).error)

    def test_docker_is_a_container_per_call_or_says_why_not(self):
        b = self.found["docker"]
        if not b.available:
            self.assertTrue(b.unavailable_reason)
            self.skipTest(b.unavailable_reason)
        argv = b.argv(HELLO, self.files.path_for(HELLO))
        self.assertEqual(argv[1:3], ["run", "--rm"])
        self.assertEqual(argv[-3:], [bl.DOCKER_IMAGE, bl.PYTHON, "/work/script.py"])
        self.assertIsNone(bl.run_once(b, HELLO, self.files).error)

    def test_a_run_is_checked_like_a_server_run(self):
        self.assertIsNone(bl.run_once(self.python, HELLO, self.files).error)
        self.assertIsNone(bl.run_once(self.python, EXCEPTION, self.files).error)

    def test_budget_stops_after_the_minimum_calls(self):
        calls = bl.run_sequential(self.python, HELLO, self.files, iterations=50, budget_s=1e-9,
                                  min_calls=3)
        self.assertEqual(len(calls), 3)
        calls = bl.run_sequential(self.python, HELLO, self.files, iterations=2)
        self.assertEqual(len(calls), 2)

    def test_a_spaced_workload_idles_between_calls_outside_the_measurement(self):
        spaced = dataclasses.replace(HELLO, key="spaced", pause_s=1.0)
        t0 = time.monotonic()
        calls = bl.run_sequential(self.python, spaced, self.files, iterations=2)
        elapsed = time.monotonic() - t0
        self.assertEqual(len(calls), 2)
        self.assertGreaterEqual(elapsed, 2.0)
        for c in calls:
            self.assertIsNone(c.error)
            self.assertLess(c.latency_ns, 1e9)  # the pause is not part of a call's latency

    def test_concurrent_runs_every_call_without_budget(self):
        calls, seconds = bl.run_concurrent(self.python, HELLO, self.files, in_flight=3, total=5)
        self.assertEqual(len(calls), 5)
        self.assertTrue(all(c.error is None for c in calls))
        self.assertGreater(seconds, 0)
        calls, _ = bl.run_concurrent(self.python, HELLO, self.files, in_flight=2, total=50,
                                     budget_s=1e-9)
        self.assertLess(len(calls), 50)
        self.assertGreaterEqual(len(calls), 4)  # 2 × in_flight finish before the budget applies


if __name__ == "__main__":
    unittest.main()
