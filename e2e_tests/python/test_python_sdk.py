"""The Python MCP SDK (`mcp` from PyPI, pinned in scripts/requirements-tools.txt) as a real client of the
server, in both eras where it supports them: stdio and Streamable HTTP, the initialize handshake
(mode="legacy"), discovery with fallback (mode="auto", which lands on 2026-07-28 here) and a pinned
2026-07-28. Run with the project's tools interpreter; MPES_SERVER names the binary under test.
"""

import asyncio
import os
import re
import subprocess
import tempfile
import unittest

import httpx2
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

SERVER = os.environ.get(
    "MPES_SERVER",
    os.path.join(os.path.dirname(__file__), "..", "..", "build", "mcp-python-exec-sandbox"),
)
TOOLS = ["execute_python", "validate_script", "check_environment", "create_session", "fork_session",
         "reset_session", "close_session", "list_sessions"]


class HttpServer:
    """The server on --transport http --port 0; the port comes from its log line."""

    def __init__(self, *args):
        self.process = subprocess.Popen(
            [SERVER, "--transport", "http", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log = ""
        for line in self.process.stderr:
            self.log += line
            match = re.search(r"listening on http://\S*?:(\d+)/mcp", line)
            if match:
                self.url = f"http://127.0.0.1:{match.group(1)}/mcp"
                break
        else:
            raise RuntimeError(f"the server did not start:\n{self.log}")

    def stop(self):
        self.process.terminate()
        code = self.process.wait(timeout=5)
        self.process.stderr.close()
        return code


async def exercise(testcase, client, expect_version):
    testcase.assertEqual(client.protocol_version, expect_version)
    tools = await client.list_tools()
    testcase.assertEqual([t.name for t in tools.tools], TOOLS)
    for tool in tools.tools:
        # Both schemas are valid JSON Schema 2020-12, as every era's tools/list says.
        testcase.assertEqual(tool.input_schema.get("$schema"), "https://json-schema.org/draft/2020-12/schema")
        Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
    result = await client.call_tool("execute_python", {"script": "print(sum(range(10)))"})
    testcase.assertFalse(result.is_error)
    testcase.assertEqual(result.structured_content["stdout"], "45\n")
    testcase.assertEqual(result.structured_content["exit_code"], 0)
    # The SDK validated structured_content against the tool's outputSchema on the way.
    bad = await client.call_tool("validate_script", {"script": "x", "dependencies": ["not a requirement!"]})
    testcase.assertIn("INVALID", bad.content[0].text)


class StdioTests(unittest.IsolatedAsyncioTestCase):
    def params(self):
        return StdioServerParameters(command=SERVER, args=[])

    async def test_initialize_era(self):
        async with Client(self.params(), mode="legacy") as client:
            await exercise(self, client, "2025-11-25")
            self.assertEqual(client.server_info.name, "mcp-python-exec-sandbox")

    async def test_discovery_selects_2026_07_28(self):
        async with Client(self.params(), mode="auto") as client:
            await exercise(self, client, "2026-07-28")
            self.assertEqual(client.server_info.name, "mcp-python-exec-sandbox")

    async def test_pinned_2026_07_28(self):
        async with Client(self.params(), mode="2026-07-28") as client:
            await exercise(self, client, "2026-07-28")


class HttpTests(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = HttpServer()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    async def test_initialize_era_session(self):
        async with Client(self.server.url, mode="legacy") as client:
            await exercise(self, client, "2025-11-25")

    async def test_discovery_selects_2026_07_28(self):
        async with Client(self.server.url, mode="auto") as client:
            await exercise(self, client, "2026-07-28")
            self.assertEqual(client.server_info.name, "mcp-python-exec-sandbox")

    async def test_pinned_2026_07_28(self):
        async with Client(self.server.url, mode="2026-07-28") as client:
            await exercise(self, client, "2026-07-28")


class HttpTokenTests(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.token = "e2e-" + os.urandom(16).hex()
        cls.token_file = tempfile.NamedTemporaryFile("w", suffix=".token", delete=False)
        cls.token_file.write(cls.token + "\n")
        cls.token_file.close()
        cls.server = HttpServer("--auth-token-file", cls.token_file.name)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0
        os.unlink(cls.token_file.name)

    async def test_bearer_token_in_both_eras(self):
        for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}) as http:
                async with Client(streamable_http_client(self.server.url, http_client=http), mode=mode) as client:
                    await exercise(self, client, version)

    async def test_no_token_is_refused(self):
        statuses = []

        async def record(response):
            statuses.append((response.status_code, response.headers.get("www-authenticate", "")))

        async with httpx2.AsyncClient(event_hooks={"response": [record]}) as http:
            with self.assertRaises(BaseException):
                async with Client(streamable_http_client(self.server.url, http_client=http),
                                  mode="2026-07-28") as client:
                    await client.list_tools()
        # The failure is the server's refusal: 401 with a Bearer challenge, nothing else.
        self.assertTrue(statuses)
        for status, challenge in statuses:
            self.assertEqual(status, 401)
            self.assertTrue(challenge.startswith("Bearer "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
