import os
import signal
import subprocess
import sys
import unittest

from harness import memory


class MemoryTest(unittest.TestCase):
    def test_tree_holds_a_grandchild_with_its_memory(self):
        # A child that starts a grandchild, both sleeping until killed.
        child = subprocess.Popen([sys.executable, "-c",
                                  "import subprocess, sys, time\n"
                                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                                  "print('started', flush=True)\n"
                                  "time.sleep(30)\n"], stdout=subprocess.PIPE,
                                 start_new_session=True)

        def cleanup():
            os.killpg(child.pid, signal.SIGKILL)  # the child's own group: it and the grandchild
            child.wait()
            child.stdout.close()
        self.addCleanup(cleanup)
        idle = memory.tree_memory(os.getpid())
        child.stdout.readline()
        tree = memory.wait_for_branches(os.getpid(), idle, 1, timeout=5, quiet=0.1)
        self.assertEqual(tree["branches_seen"], 1)  # the child and grandchild: one branch
        pids = [p["pid"] for p in tree["processes"]]
        self.assertEqual(pids[0], os.getpid())
        self.assertIn(child.pid, pids)
        grandchildren = [p for p in tree["processes"] if p["ppid"] == child.pid]
        self.assertEqual(len(grandchildren), 1)
        for p in tree["processes"]:
            self.assertGreater(p["rss_kb"], 0)
        self.assertEqual(tree["total_rss_kb"], sum(p["rss_kb"] for p in tree["processes"]))

    def test_settled_tree_waits_for_a_late_grandchild(self):
        # A child that starts its grandchild 0.3 s in: an idle tree includes it.
        child = subprocess.Popen([sys.executable, "-c",
                                  "import subprocess, sys, time\n"
                                  "time.sleep(0.3)\n"
                                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                                  "time.sleep(30)\n"], start_new_session=True)

        def cleanup():
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        self.addCleanup(cleanup)
        tree = memory.settled_tree_memory(os.getpid(), timeout=5, quiet=0.5)
        grandchildren = [p for p in tree["processes"] if p["ppid"] == child.pid]
        self.assertEqual(len(grandchildren), 1)

    def test_own_pss_is_at_most_rss(self):
        me = memory.process_memory(os.getpid())
        self.assertIsNotNone(me["pss_kb"])
        self.assertGreater(me["pss_kb"], 0)
        self.assertLessEqual(me["pss_kb"], me["rss_kb"])

    def test_gone_process_has_no_memory(self):
        p = subprocess.Popen(["true"])
        p.wait()
        self.assertIsNone(memory.process_memory(p.pid))


if __name__ == "__main__":
    unittest.main()
