import json
import os
import stat
import tempfile
import unittest

from harness import cpu_use
from harness import floor as fl
from harness import report

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# A stand-in speaking the floor program's protocol: a ready line, then per "N" one batch whose
# samples are N, N+1, ... ns; "boom" on the command line makes it refuse at start, "mute" exit
# without a word, "hang" never answer a batch.
FAKE = r'''#!/usr/bin/python3
import json, sys, time
args = sys.argv[1:]
code = args[args.index("--code") + 1]
if code == "boom":
    print(json.dumps({"error": "cannot load libpython"}), flush=True)
    sys.exit(1)
if code == "mute":
    sys.exit(3)
print(json.dumps({"ready": True, "python": "3.11.2"}), flush=True)
for line in sys.stdin:
    n = int(line)
    if code == "hang":
        time.sleep(30)
    errors = 1 if code == "flaky" else 0
    print(json.dumps({"samples_ns": [n * 1000000 + i for i in range(n - errors)], "runs": n,
                      "errors": errors, "first_error": "exit status 1" if errors else None,
                      "cpu_us": 1500 * n, "minflt_parent": 2 * n, "minflt_children": 100 * n}),
          flush=True)
'''


def _fake_binary(directory: str) -> str:
    path = os.path.join(directory, "fake-floor")
    with open(path, "w", encoding="utf-8") as f:
        f.write(FAKE)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def _workload(code: str) -> fl.FloorWorkload:
    return fl.FloorWorkload(key="hello", title="fake", code=code, expect="x")


class FloorProtocolTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.binary = _fake_binary(self.tmp.name)
        self.log = os.path.join(self.tmp.name, "floor.log")

    def _start(self, code: str, **kw) -> fl.FloorProcess:
        return fl.FloorProcess(self.binary, "/usr/bin/python3", _workload(code), self.log, **kw)

    def test_batches_are_gathered_into_one_series(self):
        proc = self._start("ok")
        self.addCleanup(proc.close)
        self.assertEqual(proc.python_version, "3.11.2")
        # The machine's busy time and the harness's own CPU, read before and after each measured
        # batch (not the warm-up): 10 ms of the machine's over the 5 runs, 0.5 ms of it the harness's.
        machine = iter([10.0, 10.006, 10.006, 10.010])
        harness = iter([1.0, 1.0005, 1.0005, 1.0005])
        series = fl.FloorSeries(proc, target=5, machine_busy_s=lambda: next(machine),
                                harness_s=lambda: next(harness))
        series.warm(2)
        series.measure(3)
        series.measure(3)  # only 2 are still wanted
        r = series.result()
        self.assertEqual(r["latency_ms"]["n"], 5)
        self.assertEqual(r["runs"], 5)
        self.assertAlmostEqual(r["own_cpu_ms_per_run"], 1.5)
        self.assertAlmostEqual(r["machine_cpu_ms_per_run"], 1.9)
        self.assertAlmostEqual(r["cpu_ms_per_run"], 1.9)
        self.assertEqual(r["cpu_from"], "machine")
        self.assertGreater(r["machine_busy_share"], 0)
        self.assertAlmostEqual(r["page_faults_per_run"], 102)
        self.assertEqual(r["errors"], 0)
        self.assertTrue(series.done)

    def test_the_cpu_per_run_is_read_over_runs_enough_to_keep_the_machine_busy(self):
        proc = self._start("ok")
        self.addCleanup(proc.close)
        # Each run keeps the machine busy 2 ms: ten measured runs are 20 ms, two ticks of
        # /proc/stat; the reading of its own goes on until 0.1 s (50 runs), in one reading.
        clock = {"busy": 0.0}
        def machine():
            return clock["busy"]
        def batch(runs, timeout, real=proc.batch):
            clock["busy"] += 0.002 * runs
            return real(runs, timeout)
        proc.batch = batch
        series = fl.FloorSeries(proc, target=10, machine_busy_s=machine, harness_s=lambda: 0.0)
        series.measure(10)
        self.assertAlmostEqual(series.result()["machine_cpu_ms_per_run"], 2.0)
        self.assertEqual(series.result()["cpu_runs"], 10)
        series.measure_cpu(busy_s=0.1, first_batch=7)
        r = series.result()
        self.assertEqual(r["latency_ms"]["n"], 10)  # its runs are not latency samples
        self.assertEqual(r["cpu_runs"], 50)         # 7, then what was left of 0.1 s: 43
        self.assertAlmostEqual(r["machine_cpu_ms_per_run"], 2.0)
        self.assertAlmostEqual(r["own_cpu_ms_per_run"], 1.5)
        self.assertEqual(r["cpu_from"], "machine")
        # Slices already as long as that need no reading of their own.
        again = fl.FloorSeries(proc, target=100, machine_busy_s=machine, harness_s=lambda: 0.0)
        again.measure(60)
        again.measure_cpu(busy_s=0.1)
        self.assertIsNone(again.cpu_reading)
        self.assertEqual(again.result()["cpu_runs"], 60)

    def test_failed_runs_are_counted_with_the_first_reason(self):
        proc = self._start("flaky")
        self.addCleanup(proc.close)
        series = fl.FloorSeries(proc, target=10)
        series.measure(4)
        r = series.result()
        self.assertEqual(r["errors"], 1)
        self.assertEqual(r["first_error"], "exit status 1")
        self.assertEqual(r["latency_ms"]["n"], 3)

    def test_a_refusal_at_start_says_why(self):
        with self.assertRaisesRegex(fl.FloorError, "cannot load libpython"):
            self._start("boom")

    def test_an_exit_without_an_answer_points_at_its_log(self):
        with self.assertRaisesRegex(fl.FloorError, "exited with status 3.*floor.log"):
            self._start("mute")

    def test_a_batch_that_never_answers_times_out(self):
        proc = self._start("hang")
        self.addCleanup(proc.close, timeout=0.2)
        with self.assertRaisesRegex(fl.FloorError, "no answer"):
            proc.batch(1, timeout=0.3)

    def test_the_budget_stops_a_series_after_its_minimum(self):
        proc = self._start("ok")
        self.addCleanup(proc.close)
        series = fl.FloorSeries(proc, target=100, budget_s=0.0, min_runs=3)
        series.measure(3)
        series.measure(3)
        self.assertTrue(series.cut_short)
        self.assertEqual(series.result()["runs"], 3)


class HelpersTest(unittest.TestCase):
    def test_the_binary_is_looked_for_next_to_the_server(self):
        with tempfile.TemporaryDirectory() as d:
            server = os.path.join(d, "mcp-python-exec-sandbox")
            path, why = fl.find_binary(server)
            self.assertIsNone(path)
            self.assertIn(os.path.join(d, fl.BINARY), why)
            floor = _fake_binary(d)
            self.assertEqual(fl.find_binary(server, floor), (floor, ""))

    def test_the_servers_interpreter_and_network_come_from_check_environment(self):
        env = {"structured": {"engine": {"interpreter": {"executable": "/opt/py/bin/python3.12"},
                                         "network": "off"}}}
        self.assertEqual(fl.interpreter_of(env), ("/opt/py/bin/python3.12", "off"))
        self.assertEqual(fl.interpreter_of({"error": "timed out"}), ("/usr/bin/python3", "on"))

    def test_the_floors_cpu_is_read_as_the_servers_is(self):
        proc = fl.FloorProcess.__new__(fl.FloorProcess)  # never started: only the defaults matter
        series = fl.FloorSeries(proc, target=1)
        self.assertIs(series._machine_busy_s, cpu_use.machine_busy_s)
        self.assertIs(series._harness_s, cpu_use.own_s)

    def test_cpu_per_run_is_the_machines_with_the_floors_own_beside_it(self):
        # 1000 runs: 1.32 s in the floor's processes (getrusage), 1.605 s of the machine's busy
        # time while they ran, 5 ms of it the harness's: 1.60 ms per run, 0.28 in kernel workers.
        c = fl.cpu_per_run(1000, 1_320_000, 1.605, 0.005)
        self.assertAlmostEqual(c["cpu_ms_per_run"], 1.60)
        self.assertAlmostEqual(c["machine_cpu_ms_per_run"], 1.60)
        self.assertAlmostEqual(c["own_cpu_ms_per_run"], 1.32)
        self.assertEqual(c["cpu_from"], "machine")
        self.assertIsNone(c["machine_busy_share"])
        # Over 2 s on 2 CPUs the machine was 40% busy (1.605 s of its 4).
        self.assertAlmostEqual(fl.cpu_per_run(1000, 1_320_000, 1.605, 0.005, 2.0, 2)["machine_busy_share"],
                               0.40125)
        # Equal is possible (no kernel work seen): still the machine's.
        self.assertEqual(fl.cpu_per_run(10, 15_000, 0.015)["cpu_from"], "machine")

    def test_a_machine_reading_below_the_floors_own_falls_back_to_it(self):
        # The floor's processes are on the machine: a lower reading is noise (ticks of /proc/stat).
        c = fl.cpu_per_run(10, 15_000, 0.010)
        self.assertAlmostEqual(c["cpu_ms_per_run"], 1.5)
        self.assertAlmostEqual(c["machine_cpu_ms_per_run"], 1.0)
        self.assertEqual(c["cpu_from"], "own: the machine's reading was lower")
        # The harness's own share is not the floor's; never below zero.
        c = fl.cpu_per_run(10, 15_000, 0.001, harness_s=0.002)
        self.assertEqual((c["machine_cpu_ms_per_run"], c["cpu_ms_per_run"]), (0.0, 1.5))
        c = fl.cpu_per_run(10, 15_000, None)
        self.assertEqual((c["cpu_ms_per_run"], c["cpu_from"]), (1.5, "own: the machine's was not read"))
        self.assertIsNone(fl.cpu_per_run(0, 0, 0.0)["cpu_ms_per_run"])

    def test_throughput_allowed_by_the_floors_cpu(self):
        self.assertAlmostEqual(fl.throughput_allowed(2.0, 2), 1000.0)
        self.assertIsNone(fl.throughput_allowed(None, 2))
        self.assertIsNone(fl.throughput_allowed(0.0, 2))

    def test_the_pandas_floor_runs_the_servers_pandas_script(self):
        from harness.workloads import PANDAS
        self.assertEqual(fl.PANDAS_FLOOR.code, PANDAS.script)
        self.assertIn("pandas", fl.PANDAS_FLOOR.preload.split(","))
        self.assertEqual(set(fl.FLOORS), {"hello", "pandas"})


def _real_floor():
    path = os.environ.get("MPES_BENCH_FLOOR") or os.path.join(REPO_ROOT, "build", fl.BINARY)
    return path if os.access(path, os.X_OK) else None


@unittest.skipUnless(_real_floor(), "mpes-bench-floor is not built (scripts/build.sh)")
class RealFloorTest(unittest.TestCase):
    """The built floor program, in the zygote's sandbox: runs really happen and are checked."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.setup = fl.FloorSetup(_real_floor(), "/usr/bin/python3", "on", self.tmp.name)

    def test_hello_runs_in_a_fresh_pid_namespace_as_the_runs_user(self):
        w = fl.FloorWorkload(key="hello", title="probe",
                             code="import os\nprint('pid', os.getpid(), 'uid', os.getuid(), os.getcwd())\n",
                             expect="pid 1 uid 1000 /home/sandbox")
        proc = self.setup.start(w)
        self.addCleanup(proc.close)
        b = proc.batch(2, timeout=60)
        self.assertEqual((b["errors"], len(b["samples_ns"])), (0, 2), b.get("first_error"))
        self.assertGreater(b["cpu_us"], 0)

    def test_runs_get_a_network_namespace_of_their_own_when_the_servers_do(self):
        # With --network off every run has its own (loopback only); with on, as root with pasta
        # and nft, the server's runs do too, and the floor says whether it followed.
        off = fl.FloorSetup(self.setup.binary, "/usr/bin/python3", "off", self.tmp.name)
        proc = off.start(fl.FloorWorkload(key="hello", title="net", code="import socket\n"
                                          "print(sorted(n for _, n in socket.if_nameindex()))\n",
                                          expect="['lo']"))
        self.addCleanup(proc.close)
        self.assertTrue(proc.own_network)
        b = proc.batch(1, timeout=60)
        self.assertEqual(b["errors"], 0, b.get("first_error"))

    def test_output_that_lacks_the_expected_text_is_an_error(self):
        proc = self.setup.start(fl.FloorWorkload(key="hello", title="wrong", code="print(1)\n",
                                                 expect="499500"))
        self.addCleanup(proc.close)
        b = proc.batch(1, timeout=60)
        self.assertEqual(b["errors"], 1)
        self.assertIn("lacks 499500", b["first_error"])

    def test_page_touch_reports_positive_costs(self):
        pt = fl.page_touch(self.setup.binary, pages=64, repeat=1)
        for key in ("fresh_page_us", "cow_fault_us", "first_read_after_fork_us", "read_again_us", "fork_us"):
            self.assertGreater(pt[key], 0, key)
        self.assertEqual(pt["pages"], 64)

    def test_wake_up_reports_round_trips_on_one_cpu_and_across(self):
        wu = fl.wake_up(self.setup.binary, samples=3)
        self.assertNotIn("error", wu)
        self.assertEqual((wu["samples"], wu["idle_ms"]), (3, 20))
        self.assertGreater(wu["same_cpu_us"], 0)
        if len(os.sched_getaffinity(0)) > 1:
            self.assertEqual(len(wu["cpus"]), 2)
            self.assertNotEqual(wu["cpus"][0], wu["cpus"][1])
            self.assertGreater(wu["cross_cpu_us"], 0)
            self.assertGreater(wu["cross_cpu_back_to_back_us"], 0)
        else:
            self.assertIsNone(wu["cross_cpu_us"])

    def test_a_measurement_the_floor_program_refuses_is_an_error(self):
        wu = fl.wake_up(self.setup.binary, samples=0)  # the program refuses a count below 1
        self.assertIn("wake-up exited with status 2", wu["error"])


def _lat(p50):
    return {"n": 5, "p50": p50, "p90": p50, "p99": p50, "mean": p50, "min": p50, "max": p50}


def _results(**over):
    seq = {
        "hello": {"title": "print('hello')", "systems": {
            "server": {"latency_ms": _lat(2.6)},
            "floor": {"latency_ms": _lat(2.0), **fl.cpu_per_run(10, 33_000, 0.040, wall_s=0.05, cores=2),
                      "page_faults_per_run": 180.0,
                      "runs": 10, "title": "floor: hello", "python_version": "3.11.2"},
            "bwrap": {"latency_ms": _lat(25.0)}}},
        "pandas": {"title": "numpy + pandas", "systems": {
            "server": {"latency_ms": _lat(9.0)},
            "floor": {"latency_ms": _lat(6.0), **fl.cpu_per_run(10, 80_000, 0.070),
                      "page_faults_per_run": 900.0,
                      "runs": 10, "title": "floor: pandas", "python_version": "3.11.2"},
            "bwrap": {"latency_ms": _lat(500.0)}}},
        "output1mb": {"title": "1 MiB of output", "systems": {
            "server": {"latency_ms": _lat(20.0)}, "bwrap": {"latency_ms": _lat(41.0)}}},
        "exception": {"title": "exception + traceback", "systems": {
            "server": {"latency_ms": _lat(3.0)}, "bwrap": {"latency_ms": _lat(26.0)}}},
    }
    r = {"machine": {"cores": 2, "cpu_model": "CPU", "os": "Debian", "kernel": "6"},
         "server": {"run": {"python_version": "3.11.2"}},
         "sequential": seq,
         "throughput": {"4": {"server": {"runs_per_s": 300.0}}},
         "memory": {"idle": {"total_rss_kb": 50 * 1024, "total_pss_kb": 40 * 1024, "count": 5,
                             "processes": [
                                 {"pid": 10, "ppid": 1, "argv0": "mcp-python-exec-sandbox", "rss_kb": 10 * 1024, "pss_kb": 10 * 512},
                                 {"pid": 11, "ppid": 10, "argv0": "bwrap", "rss_kb": 2 * 1024, "pss_kb": 2 * 512},
                                 {"pid": 12, "ppid": 11, "argv0": "zygote", "rss_kb": 14 * 1024, "pss_kb": 14 * 512},
                                 {"pid": 13, "ppid": 12, "argv0": "zygote", "rss_kb": 7 * 1024, "pss_kb": 7 * 512},
                                 {"pid": 14, "ppid": 13, "argv0": "zygote", "rss_kb": 17 * 1024, "pss_kb": 17 * 512}]}},
         "floor": {"binary": "/b/mpes-bench-floor", "python": "/usr/bin/python3", "network": "on"},
         "page_touch": {"page_size": 4096, "pages": 4096, "repeat": 3, "fresh_page_us": 0.4,
                        "cow_fault_us": 0.9, "write_again_us": 0.01, "first_read_after_fork_us": 0.05,
                        "read_again_us": 0.004, "fork_us": 300.0},
         "wake_up": {"samples": 40, "idle_ms": 20, "cpus": [0, 1], "same_cpu_us": 8.0,
                     "cross_cpu_us": 110.0, "cross_cpu_back_to_back_us": 60.0}}
    r.update(over)
    return r


class FloorReportTest(unittest.TestCase):
    def test_each_floor_target_is_judged_as_a_ratio_of_this_run(self):
        t = {x["key"]: x for x in report.evaluate_floor_targets(_results())}
        self.assertEqual(t["hello_floor"]["status"], "PASS")       # 2.6 / 2.0 = 1.30
        self.assertIn("1.30×", t["hello_floor"]["measured"])
        self.assertEqual(t["pandas_floor"]["status"], "MISS")      # 9 / 6 = 1.5
        self.assertEqual(t["output_vs_bwrap"]["status"], "PASS")   # 41 / 20 = 2.05
        self.assertEqual(t["exception_vs_hello"]["status"], "PASS")  # 3 / 2.6 = 1.15
        # 2 cores / 4 ms of machine CPU per floor run (3.3 in its processes) = 500 runs/s
        # allowed; 300 is 60%.
        self.assertEqual(t["throughput4_floor"]["status"], "MISS")
        self.assertEqual(t["throughput4_floor"]["measured"],
                         "60% = 300 runs/s ÷ 500 runs/s (2 cores ÷ 4.00 ms machine CPU per floor run)")
        # The server (10) and its zygote (14), not the zygote's spares (7 + 17) nor bwrap (2).
        self.assertEqual(t["idle_rss_40"]["status"], "PASS")
        self.assertEqual(t["idle_rss_40"]["measured"], "24.0 MiB")
        self.assertEqual(t["idle_tree_40"]["status"], "MISS")
        self.assertEqual(t["idle_tree_40"]["measured"],
                         "50.0 MiB summed over 5 processes (PSS, each shared page counted once: 40.0 MiB)")

    def test_the_idle_memory_of_the_server_and_its_zygote_can_miss_on_its_own(self):
        r = _results()
        r["memory"]["idle"]["processes"][0]["rss_kb"] = 27 * 1024  # 27 + 14 = 41 MiB
        t = {x["key"]: x for x in report.evaluate_floor_targets(r)}
        self.assertEqual(t["idle_rss_40"]["status"], "MISS")
        self.assertEqual(t["idle_rss_40"]["measured"], "41.0 MiB")

    def test_the_throughput_target_falls_back_to_the_floors_own_cpu_and_says_so(self):
        r = _results()
        # The machine's busy time read 2.5 ms per run, below the floor's processes' 3.3: noise.
        r["sequential"]["hello"]["systems"]["floor"].update(fl.cpu_per_run(10, 33_000, 0.025))
        t = {x["key"]: x for x in report.evaluate_floor_targets(r)}
        self.assertEqual(t["throughput4_floor"]["measured"],
                         "49% = 300 runs/s ÷ 606 runs/s (2 cores ÷ 3.30 ms floor CPU per run, its "
                         "processes' own: the machine's reading was lower)")
        md = report.to_markdown(dict(r, quick=True, started_at="now", iterations={}, baselines=[], targets=[]))
        self.assertIn("- floor: hello: 3.30 ms of CPU per run in the floor's processes (the machine's busy "
                      "time read 2.50 ms per run, below that, which only noise can do: the floor's own is "
                      "used), and 180 page faults per run (10 runs).", md)

    def test_targets_without_a_floor_are_not_judged(self):
        r = _results()
        del r["sequential"]["hello"]["systems"]["floor"]
        t = {x["key"]: x for x in report.evaluate_floor_targets(r)}
        self.assertEqual(t["hello_floor"]["status"], "n/a")
        self.assertEqual(t["throughput4_floor"]["status"], "n/a")
        self.assertEqual(t["exception_vs_hello"]["status"], "PASS")

    def test_the_pandas_target_falls_back_to_the_undeclared_form(self):
        r = _results()
        r["sequential"]["pandas"]["systems"]["server"] = {"latency_ms": None, "errors": 3}
        r["sequential"]["pandas_undeclared"] = {"title": "undeclared", "systems": {
            "server": {"latency_ms": _lat(7.0)}}}
        t = {x["key"]: x for x in report.evaluate_floor_targets(r)}
        self.assertEqual(t["pandas_floor"]["status"], "PASS")  # 7 / 6 = 1.17
        self.assertIn("not declared", t["pandas_floor"]["measured"])

    def test_markdown_shows_ratios_cpu_page_touch_and_pass_miss_lines(self):
        r = _results()
        r["floor_targets"] = report.evaluate_floor_targets(r)
        md = report.to_markdown(dict(r, quick=True, started_at="now", iterations={}, baselines=[],
                                     targets=[]))
        self.assertIn("## Against the floor (same session)", md)
        self.assertIn("| print('hello') | 2.60 | hello | 2.00 | 1.30× | 25.0 | 9.6× |", md)
        self.assertIn("| numpy + pandas | 9.00 | pandas | 6.00 | 1.50× |", md)
        self.assertIn("| 1 MiB of output | 20.0 | hello | 2.00 | 10.00× | 41.0 | 2.0× |", md)
        self.assertIn("- floor: hello: 4.00 ms of machine CPU per run (3.30 ms in the floor's processes, "
                      "the rest in kernel workers and any other load: the CPUs were 40% busy while its "
                      "batches ran), and 180 page faults per run (10 runs).", md)
        self.assertIn("- At the hello floor's CPU per run (4.00 ms machine CPU per floor run), 2 cores "
                      "allow 500 runs/s; the server: 4 in flight 300 runs/s.", md)
        self.assertIn("- **MISS** hello throughput, 4 in flight ≥ 70% of what the floor's CPU per run "
                      "allows on the cores present: 60% = 300 runs/s ÷ 500 runs/s", md)
        self.assertIn("copy-on-write fault after fork 0.90 µs", md)
        self.assertIn("asleep for 20 ms takes 8.0 µs on its waker's CPU, 110.0 µs on another CPU "
                      "(60.0 µs back to back)", md)
        self.assertIn("- **PASS** hello p50 ≤ 1.3× its floor", md)
        self.assertIn("- **MISS** numpy + pandas p50 ≤ 1.3× its floor", md)
        self.assertIn("| print('hello') | " + report.FLOOR_TITLE + " | 5 | 2.00 |", md)

    def test_the_floor_says_when_its_runs_had_a_network_namespace_of_their_own(self):
        r = _results()
        md = report.to_markdown(dict(r, quick=True, started_at="now", iterations={}, baselines=[], targets=[]))
        self.assertIn("(user, pid, mount, ipc, uts, cgroup) with", md)
        r["sequential"]["hello"]["systems"]["floor"]["own_network"] = True
        md = report.to_markdown(dict(r, quick=True, started_at="now", iterations={}, baselines=[], targets=[]))
        self.assertIn("(user, pid, mount, ipc, uts, cgroup, net) with", md)

    def test_a_machine_measurement_that_failed_is_reported_not_shown(self):
        r = _results(wake_up={"error": "wake-up: sched_setaffinity to CPU 1: Invalid argument"})
        self.assertIn("wake-up: wake-up: sched_setaffinity to CPU 1: Invalid argument", report.collect_errors(r))
        md = report.to_markdown(dict(r, quick=True, started_at="now", iterations={}, baselines=[], targets=[]))
        self.assertIn("Waking a process here, not measured (wake-up: sched_setaffinity", md)

    def test_a_skipped_floor_says_why(self):
        md = report.to_markdown(_results(floor={"skipped": "no floor program at /x"}, quick=True,
                                         started_at="now", iterations={}, baselines=[], targets=[]))
        self.assertIn("Not measured: no floor program at /x.", md)

    def test_the_readme_table_has_a_floor_column_and_the_floor_targets(self):
        r = _results(baselines=[{"key": "bwrap", "title": "bwrap+python (per call)", "available": True}],
                     started_at="now", targets=[])
        r["floor_targets"] = report.evaluate_floor_targets(r)
        table = report.to_readme_table(r)
        self.assertIn(f"| workload (p50) | **this server** | {report.FLOOR_TITLE} | bwrap+python (per call) |",
                      table)
        self.assertIn("| hello p50 ≤ 1.3× its floor | 1.30× = server 2.60 ms ÷ floor 2.00 ms | PASS |", table)
        json.dumps(r)  # the results stay serialisable


if __name__ == "__main__":
    unittest.main()
