import os
import sys
import tempfile
import unittest

from harness.client import HarnessError, McpServer, ServerExited, _parse_result_text, tool_outcome

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_peer.py")


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def start(self, mode):
        server = McpServer([sys.executable, PEER, mode], dict(os.environ),
                           os.path.join(self.tmp.name, f"{mode}.log"))
        self.addCleanup(server.close, timeout=5)
        return server

    def test_answers_server_requests_and_counts_notifications(self):
        server = self.start("ping")
        init = server.initialize()
        self.assertEqual(init.result["serverInfo"]["name"], "fake-peer")
        resp = server.call_tool("execute_python", {"script": "x"}, timeout=10)
        self.assertEqual(tool_outcome(resp)["stdout"], "pong-ok")
        self.assertGreater(resp.latency_ns, 0)
        self.assertEqual(server.notifications.get("notifications/message"), 1)
        exit_info = server.close()
        self.assertEqual(exit_info.status, 0)
        self.assertFalse(exit_info.killed)

    def test_matches_out_of_order_responses_to_their_requests(self):
        server = self.start("reorder")
        server.initialize()
        a = server.send_request("tools/call", {"name": "t", "arguments": {}})
        b = server.send_request("tools/call", {"name": "t", "arguments": {}})
        rb = server.wait_for(b, 10)
        ra = server.wait_for(a, 10)
        self.assertEqual(tool_outcome(ra)["stdout"], "first")
        self.assertEqual(tool_outcome(ra)["exit_code"], 1)
        self.assertEqual(tool_outcome(rb)["stdout"], "second")

    def test_a_long_line_split_over_reads_arrives_whole(self):
        server = self.start("big")
        server.initialize()
        resp = server.call_tool("execute_python", {"script": "x"}, timeout=10)
        self.assertEqual(tool_outcome(resp)["stdout"], "y" * (2 << 20))
        server.pump(1.0)  # the notification that followed it in the same write
        self.assertEqual(server.notifications.get("notifications/x"), 1)

    def test_non_json_on_stdout_breaks_the_harness(self):
        server = self.start("garbage")
        with self.assertRaisesRegex(HarnessError, "not JSON"):
            server.initialize()

    def test_a_server_that_exits_is_reported_with_its_status(self):
        server = self.start("exit")
        server.initialize()
        with self.assertRaisesRegex(ServerExited, "status 3"):
            server.call_tool("execute_python", {"script": "x"}, timeout=10)


class ResultTextTest(unittest.TestCase):
    def test_parses_the_python_servers_sections(self):
        text = ("--- stdout ---\nhello\nworld\n--- stderr ---\noops\n--- exit_code: 2 ---\n"
                "--- duration_ms: 5 ---")
        self.assertEqual(_parse_result_text(text), ("hello\nworld", "oops", 2))

    def test_no_sections_no_exit_code(self):
        self.assertEqual(_parse_result_text("--- exit_code: 0 ---"), ("", "", 0))
        self.assertEqual(_parse_result_text("Sandbox unavailable"), ("", "", None))


if __name__ == "__main__":
    unittest.main()
