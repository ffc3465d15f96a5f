import os
import time
import unittest

from harness.cpu_use import Snapshot, per_call, snapshot, text


class PerCallTest(unittest.TestCase):
    def test_split_per_call(self):
        s = per_call(Snapshot(10.0, 1.0, 2.0, 5.0), Snapshot(14.0, 1.5, 3.0, 6.5), 1000)
        self.assertAlmostEqual(s["machine_ms"], 4.0)
        self.assertAlmostEqual(s["client_ms"], 0.5)
        self.assertAlmostEqual(s["server_ms"], 1.0)
        self.assertAlmostEqual(s["zygotes_ms"], 1.5)
        self.assertAlmostEqual(s["rest_ms"], 1.0)
        self.assertIn("the client 0.50, the server process 1.00, the zygotes with their spares and "
                      "runs 1.50, the rest (network agent, pasta, kernel) 1.00", text(s))

    def test_unreadable_server_leaves_its_part_unknown(self):
        s = per_call(Snapshot(10.0, 1.0, None), Snapshot(12.0, 1.5, None), 1000)
        self.assertIsNone(s["server_ms"])
        self.assertAlmostEqual(s["rest_ms"], 1.5)
        self.assertIn("server process —", text(s))

    def test_rest_never_below_zero_and_no_calls_no_split(self):
        # Ticks are coarse: the parts read separately may add up to more than the machine's.
        self.assertEqual(per_call(Snapshot(10.0, 1.0, 1.0), Snapshot(10.001, 1.01, 1.01), 10)["rest_ms"], 0.0)
        self.assertIsNone(per_call(Snapshot(0, 0, 0), Snapshot(1, 1, 1), 0))
        self.assertEqual(text(None), "not measured")

    def test_snapshot_of_this_process_counts_its_work(self):
        before = snapshot(os.getpid())
        x = 0
        for i in range(3_000_000):
            x += i
        after = snapshot(os.getpid())
        self.assertGreater(after.client_s, before.client_s)
        self.assertGreater(after.server_s, before.server_s)  # here the "server" is this process
        self.assertGreater(after.machine_busy_s, before.machine_busy_s)
        self.assertIsNone(snapshot(2 ** 22 + 12345).server_s)  # no such process


    def test_zygotes_count_what_they_reaped_once(self):
        # A process named zygote under this one reaps a zygote child that worked: the child's
        # CPU is counted once, in its parent's (none under a tree without zygotes).
        self.assertEqual(snapshot(os.getpid()).zygotes_s, 0.0)
        ready_r, ready_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the "zygote"
            try:
                with open("/proc/self/comm", "w") as f:
                    f.write("zygote")
                child = os.fork()
                if child == 0:  # its "run": 0.3 s of CPU
                    end = time.process_time() + 0.3
                    while time.process_time() < end:
                        pass
                    os._exit(0)
                os.waitpid(child, 0)
                os.write(ready_w, b"x")
                os.read(done_r, 1)
            finally:
                os._exit(0)
        try:
            os.read(ready_r, 1)
            zygotes = snapshot(os.getpid()).zygotes_s
            self.assertGreaterEqual(zygotes, 0.25)
            self.assertLess(zygotes, 0.6)  # not twice
        finally:
            os.write(done_w, b"x")
            os.waitpid(pid, 0)
            for fd in (ready_r, ready_w, done_r, done_w):
                os.close(fd)


if __name__ == "__main__":
    unittest.main()
