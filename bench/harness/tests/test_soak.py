import unittest

import os

from harness.soak import (COUNT_GROWTH_BOUND, RSS_GROWTH_BOUND_KB, check, choose_kinds, sample as take_sample,
                          step_value, verdict, write_wheel)


def sample(runs, rss=10_000, zrss=20_000, fds=80, threads=20, processes=15):
    return {"runs": runs, "t": runs / 100, "server_rss_kb": rss, "zygote_rss_kb": zrss,
            "server_fds": 17, "server_threads": 7, "tree_fds": fds, "tree_threads": threads,
            "processes": processes, "zygotes": 2}


class VerdictTest(unittest.TestCase):
    def test_flat_curves_pass(self):
        v = verdict([sample(r) for r in range(0, 1001, 100)], 1000)
        self.assertTrue(v["ok"], v["problems"])
        self.assertEqual(v["growth"]["server_rss_kb"], 0)

    def test_warm_up_growth_is_allowed(self):
        # The first tenth may grow (spares, caches, the dependency zygote); only later growth counts.
        samples = [sample(0, rss=5_000, processes=6, fds=30)] + [sample(r) for r in range(100, 1001, 100)]
        self.assertTrue(verdict(samples, 1000)["ok"])

    def test_rss_beyond_the_bound_fails(self):
        samples = [sample(r) for r in range(0, 901, 100)]
        samples.append(sample(1000, rss=10_000 + RSS_GROWTH_BOUND_KB + 1))
        v = verdict(samples, 1000)
        self.assertFalse(v["ok"])
        self.assertIn("server_rss_kb grew", v["problems"][0])

    def test_one_leaked_fd_or_process_fails(self):
        for key in ("tree_fds", "processes", "tree_threads"):
            samples = [sample(r) for r in range(0, 1001, 100)]
            samples[-1] = dict(samples[-1], **{key: samples[-1][key] + COUNT_GROWTH_BOUND + 1})
            v = verdict(samples, 1000)
            self.assertFalse(v["ok"], key)
            self.assertTrue(any(key in p for p in v["problems"]), v["problems"])

    def test_too_few_samples_is_no_verdict(self):
        self.assertFalse(verdict([sample(0)], 10)["ok"])

    def test_the_servers_rss_is_split_into_its_own_memory_and_file_pages(self):
        s = take_sample(os.getpid(), 0, 0.0)
        self.assertGreater(s["server_anon_kb"], 0)
        self.assertGreater(s["server_file_kb"], 0)
        self.assertLessEqual(s["server_anon_kb"] + s["server_file_kb"], s["server_rss_kb"])
        # Their growth is shown, not judged: file pages growing past the RSS bound alone still
        # fail through the RSS, and growth of either part is reported.
        samples = [dict(sample(r), server_anon_kb=4_000, server_file_kb=6_000) for r in range(0, 1001, 100)]
        samples[-1] = dict(samples[-1], server_file_kb=6_500)
        v = verdict(samples, 1000)
        self.assertTrue(v["ok"], v["problems"])
        self.assertEqual((v["growth"]["server_anon_kb"], v["growth"]["server_file_kb"]), (0, 500))


class CheckTest(unittest.TestCase):
    def outcome(self, code, out="", err="", end="exit"):
        return {"exit_code": code, "stdout": out, "stderr": err, "structured": {"end_reason": end}}

    def test_expected_answers(self):
        self.assertIsNone(check("hello", self.outcome(0, "hello\n")))
        self.assertIsNone(check("exception", self.outcome(1, err="ValueError: soak")))
        self.assertIsNone(check("timeout", self.outcome(-9, end="timeout")))
        self.assertIsNone(check("deps", self.outcome(0, "1.0\n")))
        step = self.outcome(0)
        step["structured"].update({"session": {"kept": True}, "return_value": {"repr": "7"}})
        self.assertIsNone(check("step", step))
        self.assertEqual(step_value(step), 7)

    def test_wrong_answers_say_why(self):
        self.assertIn("hello", check("hello", self.outcome(0, "")))
        self.assertIn("end=exit", check("timeout", self.outcome(0)))
        not_kept = self.outcome(0)
        not_kept["structured"].update({"session": {"kept": False}, "return_value": {"repr": "7"}})
        self.assertIn("step", check("step", not_kept))
        self.assertIn("step", check("step", self.outcome(0)))  # no value

    def test_mix_is_deterministic_and_covers_every_kind(self):
        kinds = choose_kinds(3000, 20)
        self.assertEqual(kinds, choose_kinds(3000, 20))
        self.assertEqual(set(kinds),
                         {"hello", "output", "exception", "deps", "step", "cancel", "timeout"})


class WheelTest(unittest.TestCase):
    def test_wheel_has_a_record(self):
        import os
        import tempfile
        import zipfile
        with tempfile.TemporaryDirectory() as d:
            write_wheel(d)
            with zipfile.ZipFile(os.path.join(d, "mpes_soak_leaf-1.0-py3-none-any.whl")) as z:
                self.assertIn("mpes_soak_leaf-1.0.dist-info/RECORD", z.namelist())


if __name__ == "__main__":
    unittest.main()
