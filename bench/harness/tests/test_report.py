import os
import tempfile
import unittest

from harness import report


def _lat(p50):
    return {"n": 5, "p50": p50, "p90": p50 * 1.2, "p99": p50 * 1.5, "mean": p50, "min": p50 * 0.9,
            "max": p50 * 2}


def _results():
    return {
        "quick": True, "started_at": "now",
        "machine": {"cpu_model": "CPU", "cores": 2, "memory_gib": 4.0, "os": "Debian",
                    "kernel": "6", "python_baselines": "Python 3.11.2", "bwrap": "bubblewrap 0.8.0"},
        "iterations": {"warmup": 1, "server": 5, "baseline": 5},
        "server": {"path": "/srv", "extra_args": [], "run": {"sandbox": "native"}},
        "baselines": [{"key": "bwrap", "title": "bwrap+python (per call)", "available": True},
                      {"key": "uv", "title": "uv run --script (per call)", "available": False,
                       "unavailable_reason": "uv not found"}],
        "sequential": {
            "hello": {"title": "print('hello')", "systems": {
                "server": {"latency_ms": _lat(1.0), "samples_ms": [1.0] * 5, "errors": 0},
                "bwrap": {"latency_ms": _lat(20.0), "samples_ms": [20.0] * 5, "errors": 0},
                "uv": {"skipped": "uv not found"}}},
            "pandas": {"title": "numpy + pandas", "systems": {
                "server": {"latency_ms": None, "samples_ms": [], "errors": 3,
                           "first_error": "server error: dependencies unsupported"},
                "bwrap": {"latency_ms": _lat(600.0), "samples_ms": [600.0] * 5, "errors": 0}}},
        },
        "throughput": {"4": {"server": {"runs_per_s": 400.0, "latency_ms": _lat(9.0), "completed": 8,
                                        "requests": 8}}},
        "cold_start": {"initialize_ms": _lat(5.0), "first_result_ms": _lat(200.0), "runs": []},
        "memory": {"idle": {"processes": [{"pid": 1, "argv0": "srv", "rss_kb": 20480, "pss_kb": 10240}],
                            "count": 1, "total_rss_kb": 20480, "total_pss_kb": 10240},
                   "concurrent": {"runs_in_flight": 2, "processes_added": 2, "extra_pss_kb_per_run": 3072.0,
                                  "extra_rss_kb_per_run": 9000.0,
                                  "idle": {"total_pss_kb": 10240}, "busy": {"total_pss_kb": 16384}}},
    }


class TargetsTest(unittest.TestCase):
    def test_each_target_is_judged_from_the_measurements(self):
        t = {x["key"]: x for x in report.evaluate_targets(_results())}
        self.assertEqual(t["hello_p50"]["status"], "met")
        self.assertEqual(t["hello_ratio"]["measured"], "20.0×")
        self.assertEqual(t["hello_ratio"]["status"], "met")
        self.assertEqual(t["pandas_ratio"]["status"], "n/a")  # the server's pandas runs failed
        self.assertEqual(t["throughput4"]["status"], "NOT met")
        self.assertEqual(t["initialize"]["status"], "met")
        self.assertEqual(t["first_result"]["status"], "NOT met")
        self.assertEqual(t["idle_rss"]["measured"], "20.0 MiB")
        self.assertEqual(t["idle_rss"]["status"], "met")
        self.assertEqual(t["pss_per_run"]["measured"], "3.00 MiB")
        self.assertEqual(t["pss_per_run"]["status"], "NOT met")


class MarkdownTest(unittest.TestCase):
    def test_table_rows_errors_and_skips(self):
        r = _results()
        r["targets"] = report.evaluate_targets(r)
        md = report.to_markdown(r)
        self.assertIn("| print('hello') | **this server** | 5 | 1.00 |", md)
        self.assertIn("| print('hello') | bwrap+python (per call) | 5 | 20.0 |", md)
        self.assertIn("| 20.0× |", md)
        self.assertIn("| numpy + pandas | **this server** (3 errors) | 0 | failed |", md)
        self.assertIn("Skipped baseline uv run --script (per call): uv not found", md)
        self.assertIn("server error: dependencies unsupported", md)
        self.assertIn("| 4 | **this server** | 400 |", md)
        self.assertIn("extra PSS per run 3.0 MiB", md)


class ReadmeTableTest(unittest.TestCase):
    def test_one_row_per_workload_with_the_speed_up(self):
        r = _results()
        r["targets"] = report.evaluate_targets(r)
        table = report.to_readme_table(r)
        self.assertIn("| workload (p50) | **this server** | bwrap+python (per call) | speed-up vs bwrap+python |",
                      table)
        self.assertIn("| print('hello') | 1.00 ms | 20.0 ms | 20.0× |", table)
        self.assertIn("| numpy + pandas | failed | 600 ms | — |", table)
        self.assertNotIn("uv run", table)  # unavailable baselines get no column


class ChartTest(unittest.TestCase):
    def test_writes_an_svg(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "latency.svg")
            why = report.write_chart(_results(), path)
            if why is not None:
                self.skipTest(why)
            with open(path, encoding="utf-8") as f:
                svg = f.read()
            self.assertTrue(svg.lstrip().startswith("<?xml"), svg[:100])
            for text in ("this server", "numpy + pandas — failed on: this server",
                         "bwrap+python (per call)", "runs/s"):
                self.assertTrue(text in svg, f"{text!r} missing from the chart")


if __name__ == "__main__":
    unittest.main()


class HttpSectionTest(unittest.TestCase):
    def _with_http(self, balanced):
        r = _results()
        r["http"] = {"direct": {"hello": {"latency_ms": _lat(2.0), "errors": 0},
                                "throughput": {"4": {"runs_per_s": 300.0, "errors": 0}}},
                     "balanced": balanced}
        r["targets"] = report.evaluate_targets(r)
        return r

    def test_http_next_to_stdio_and_the_balancer(self):
        r = self._with_http({"replicas": 3, "hello": {"latency_ms": _lat(3.0), "errors": 0},
                             "throughput": {"4": {"runs_per_s": 250.0, "errors": 2,
                                                  "first_error": "connection failed: reset"}}})
        md = report.to_markdown(r)
        self.assertIn("| stdio | 5 | 1.00 |", md)
        self.assertIn("| Streamable HTTP, one server | 5 | 2.00 |", md)
        self.assertIn("| 2.00× |", md)
        self.assertIn("| HTTP through HAProxy, 3 replicas | 5 | 3.00 |", md)
        self.assertIn("| 4 | 400 | 300 | 250 |", md)
        self.assertIn("HTTP (balanced) 4 in flight: 2 failed; first: connection failed: reset", md)
        table = report.to_readme_table(r)
        self.assertIn("| print('hello') over Streamable HTTP | 2.00 ms |", table)
        self.assertIn("| hello throughput over HTTP, HAProxy + 3 replicas, 4 in flight | 250 runs/s |", table)

    def test_skipped_balancer_and_unmeasured_http(self):
        md = report.to_markdown(self._with_http({"skipped": "haproxy not installed"}))
        self.assertIn("(HAProxy not measured: haproxy not installed)", md)
        r = _results()
        r["http"] = {"error": "the HTTP server did not start listening"}
        self.assertIn("Not measured: the HTTP server did not start listening", report.to_markdown(r))
