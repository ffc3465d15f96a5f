import http.server
import json
import threading
import unittest

from harness import http_runs
from harness.workloads import HELLO


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append((dict(self.headers), body))
        stdout = "hello\n" if body["id"] % 3 else "nope\n"  # every third call does the wrong thing
        reply = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "content": [], "structuredContent": {"stdout": stdout, "stderr": "", "exit_code": 0}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


class HttpRunsTest(unittest.TestCase):
    def setUp(self):
        _Handler.seen = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_stateless_requests_and_checked_outcomes(self):
        r = http_runs.sequential(self.port, HELLO, warmup=1, iterations=6, budget_s=60)
        # Calls 2..7 measured; ids 3 and 6 printed the wrong thing and count as errors.
        self.assertEqual(r["latency_ms"]["n"], 4)
        self.assertEqual(r["errors"], 2)
        self.assertIn("stdout lacks", r["first_error"])
        headers, body = _Handler.seen[0]
        self.assertEqual(headers["MCP-Protocol-Version"], "2026-07-28")
        self.assertEqual(headers["Mcp-Name"], "execute_python")
        self.assertEqual(body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28")
        self.assertEqual(body["params"]["arguments"]["script"], HELLO.script)

    def test_concurrent_counts_every_request_once(self):
        r = http_runs.concurrent(self.port, HELLO, in_flight=4, total=30, budget_s=60)
        self.assertEqual(len(_Handler.seen), 30)
        self.assertEqual(r["completed"] + r["errors"], 30)
        wrong = sum(1 for _, body in _Handler.seen if body["id"] % 3 == 0)  # ids count per connection
        self.assertEqual(r["errors"], wrong)
        self.assertGreater(r["runs_per_s"], 0)


if __name__ == "__main__":
    unittest.main()
