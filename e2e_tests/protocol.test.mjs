// The server through the real MCP SDK client (Client + StdioClientTransport).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
    assert.deepEqual(tools.map((t) => t.name).sort(), ['check_environment', 'close_session', 'create_session',
      'execute_python', 'fork_session', 'list_sessions', 'reset_session', 'validate_script']);
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
    assert.equal(tools.length, 8);
  } finally {
    await client.close();
  }
});

test('stdin EOF: idle, the server exits 0 within 2 s; a run in flight is finished within its timeout first', async () => {
  const start = () => {
    const child = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const state = { out: '' };
    child.stdout.on('data', (d) => { state.out += d; });
    return { child, exited, state };
  };
  const waitFor = async (pred) => {
    for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
  };
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }) + '\n';

  const idle = start();
  idle.child.stdin.write(init);
  await waitFor(() => idle.state.out.includes('"id":1'));
  let closedAt = Date.now();
  idle.child.stdin.end();
  assert.equal((await idle.exited).code, 0);
  assert.ok(Date.now() - closedAt < 2000, `exited after ${Date.now() - closedAt} ms`);

  const busy = start();
  busy.child.stdin.write(init);
  await waitFor(() => busy.state.out.includes('"id":1'));
  busy.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(30)', timeout_seconds: 2 } } }) + '\n');
  await new Promise((r) => setTimeout(r, 300));
  closedAt = Date.now();
  busy.child.stdin.end();
  assert.equal((await busy.exited).code, 0);
  const waited = Date.now() - closedAt;
  assert.ok(waited >= 1000 && waited < 8000, `exited after ${waited} ms`);
  const messages = busy.state.out.split('\n').filter(Boolean).map((line) => JSON.parse(line));
  for (const m of messages) assert.equal(m.jsonrpc, '2.0');
  assert.equal(messages.find((m) => m.id === 2)?.result?.structuredContent?.timed_out, true, busy.state.out);
});

test('stdin EOF in the middle of interpreter discovery leaves no probe running', async () => {
  // A "python3.99" on PATH that takes 30 s to answer its probe: discovery (which probes every
  // interpreter on the host, after the first run) is still waiting for it when stdin closes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-e2e-slowpy-'));
  fs.writeFileSync(path.join(dir, 'python3.99'), '#!/bin/sh\nsleep 30\n', { mode: 0o755 });
  // Every process the server starts outside the sandbox inherits its environment: a tag there
  // finds them after the server is gone.
  const tag = randomUUID();
  const tagged = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((pid) => {
    try {
      if (/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;  // a zombie
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`MPES_E2E_TAG=${tag}`);
    } catch {
      return false;  // gone, or not ours to read
    }
  });
  const child = spawn(serverPath, [], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, MPES_E2E_TAG: tag, PATH: `${dir}:${process.env.PATH}` },
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const waitFor = async (pred, tries = 400) => {
    for (let i = 0; i < tries && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
    return pred();
  };
  try {
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }) + '\n');
    await waitFor(() => out.includes('"id":1'));
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'execute_python', arguments: { script: 'print(1)' } } }) + '\n');
    assert.ok(await waitFor(() => out.includes('"id":2')), 'the first run answered');
    const slowProbe = () => tagged().some((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('python3.99');
      } catch {
        return false;
      }
    });
    assert.ok(await waitFor(slowProbe), 'the slow probe started');
    child.stdin.end();
    assert.equal(await exited, 0);
    // Killed at exit; the kernel may take a moment to finish them off.
    assert.ok(await waitFor(() => tagged().length === 0, 40), `still running: ${tagged().join(', ')}`);
  } finally {
    for (const pid of tagged()) process.kill(Number(pid), 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
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
