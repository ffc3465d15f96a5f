// The server through the real MCP SDK client (Client + StdioClientTransport).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, serverPath, textOf } from './lib/client.mjs';

test('connect, list the tools with their schemas', async () => {
  const { client } = await connect();
  try {
    const info = client.getServerVersion();
    assert.equal(info.name, 'mcp-python-exec-sandbox');
    assert.ok(info.version);
    assert.ok(client.getServerCapabilities().tools);
    assert.ok(client.getServerCapabilities().logging);
    assert.ok(client.getInstructions()?.includes('execute_python'));
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['check_environment', 'execute_python', 'validate_script']);
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object');
      assert.equal(typeof tool.inputSchema.properties, 'object');
      assert.equal(tool.outputSchema?.type, 'object');
      assert.ok(tool.description.length > 100, `${tool.name} has a real description`);
      assert.equal(typeof tool.annotations, 'object');
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(byName.validate_script.annotations.readOnlyHint, true);
    assert.equal(byName.check_environment.annotations.readOnlyHint, true);
    assert.deepEqual(byName.execute_python.inputSchema.required, ['script']);
  } finally {
    await client.close();
  }
});

test('validate_script answers as the Python server does (structuredContent checked by the SDK)', async () => {
  const { client } = await connect();
  try {
    const script = '# /// script\n# requires-python = ">=3.9"\n# dependencies = ["requests>=2.31"]\n# ///\nimport requests\n';
    const valid = await client.callTool({ name: 'validate_script', arguments: { script, dependencies: ['rich'] } });
    assert.equal(valid.isError, false);
    assert.equal(textOf(valid), 'VALID\nrequires-python: >=3.9\ndependencies (2):\n  - requests>=2.31\n  - rich');
    assert.equal(valid.structuredContent.valid, true);
    assert.deepEqual(valid.structuredContent.dependencies, ['requests>=2.31', 'rich']);

    const none = await client.callTool({ name: 'validate_script', arguments: { script: 'print(1)' } });
    assert.match(textOf(none), /^VALID\nrequires-python: >=3\.\d+\ndependencies: none$/);

    const invalid = await client.callTool({ name: 'validate_script', arguments: { script: 'x', dependencies: ['requests>>2'] } });
    assert.match(textOf(invalid), /^INVALID: .*requests>>2/);
    assert.equal(invalid.structuredContent.valid, false);

    const missing = await client.callTool({ name: 'validate_script', arguments: {} });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /'script'/);
  } finally {
    await client.close();
  }
});

test('check_environment starts with the nine lines of the Python server', async () => {
  const { client } = await connect(['--no-warm-cache', '--default-timeout', '20']);
  try {
    const result = await client.callTool({ name: 'check_environment', arguments: {} });
    const lines = textOf(result).split('\n');
    assert.ok(lines.length > 9);
    const prefixes = ['Python version: ', 'uv: ', 'Platform: ', 'Sandbox backend: native', 'Sandbox status: ',
      'Default timeout: 20s', 'Max timeout: 300s', 'Max output: 102400 bytes', 'Cache warming: disabled'];
    prefixes.forEach((prefix, i) => assert.ok(lines[i].startsWith(prefix), `line ${i}: ${lines[i]}`));
    assert.match(lines[0], /^Python version: 3\.\d+\.\d+/);
    assert.equal(result.structuredContent.default_timeout_seconds, 20);
    assert.equal(result.structuredContent.cache_warming, false);
    assert.ok(result.structuredContent.interpreters.length >= 1);
  } finally {
    await client.close();
  }
});

test('ping and logging/setLevel', async () => {
  const { client } = await connect();
  try {
    assert.deepEqual(await client.ping(), {});
    assert.deepEqual(await client.setLoggingLevel('debug'), {});
  } finally {
    await client.close();
  }
});

test('an aborted call is cancelled and the server keeps serving', async () => {
  const { client } = await connect();
  try {
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(20)\n', timeout_seconds: 60 } },
      undefined,
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort('changed my mind'), 300);
    await assert.rejects(call);
    const started = Date.now();
    assert.deepEqual(await client.ping(), {});
    assert.ok(Date.now() - started < 1000);
    const { tools } = await client.listTools();
    assert.equal(tools.length, 3);
  } finally {
    await client.close();
  }
});

test('stdin EOF: the server exits 0 within 2 s, also with a run in flight', async () => {
  const child = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const waitFor = async (pred) => {
    for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
  };
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }) + '\n');
  await waitFor(() => out.includes('"id":1'));
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(30)' } } }) + '\n');
  await new Promise((r) => setTimeout(r, 300));
  const closedAt = Date.now();
  child.stdin.end();
  const { code } = await exited;
  assert.equal(code, 0);
  assert.ok(Date.now() - closedAt < 2000, `exited after ${Date.now() - closedAt} ms`);
  for (const line of out.split('\n').filter(Boolean)) assert.equal(JSON.parse(line).jsonrpc, '2.0');
});

test('SIGTERM: the server exits 0 within 2 s', async () => {
  const child = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }) + '\n');
  for (let i = 0; i < 200 && !out.includes('"id":1'); i++) await new Promise((r) => setTimeout(r, 25));
  const sentAt = Date.now();
  child.kill('SIGTERM');
  const { code } = await exited;
  assert.equal(code, 0);
  assert.ok(Date.now() - sentAt < 2000);
});
