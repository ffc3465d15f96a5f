// Raw JSON-RPC lines through a plain child process: what SDK clients never send.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serverPath } from './lib/client.mjs';
import { RawServer } from './lib/raw_server.mjs';

test('malformed JSON gets -32700 with no id member, then serving goes on', async () => {
  const s = new RawServer();
  await s.initialize();
  await s.send('{"jsonrpc": "2.0", "id": 1, "method": ');
  const error = await s.next((m) => m.error?.code === -32700);
  assert.equal('id' in error, false);
  await s.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual((await s.byId(2)).result, {});
  assert.equal(await s.close(), 0);
});

test('a 17 MiB line is answered with an error and the server keeps serving', async () => {
  const s = new RawServer();
  await s.initialize();
  const script = 'x'.repeat(17 * 1024 * 1024);
  await s.send({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'validate_script', arguments: { script } }, id: 'huge' });
  const error = await s.byId('huge', 15000);
  assert.equal(error.error.code, -32600);
  assert.match(error.error.message, /exceeds/);
  await s.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
  assert.deepEqual((await s.byId(3)).result, {});
  assert.equal(await s.close(), 0);
});

test('carriage returns before the newline are tolerated', async () => {
  const s = new RawServer();
  await s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) + '\r');
  assert.deepEqual((await s.byId(1)).result, {});
  assert.equal(await s.close(), 0);
});

test('batches are rejected on 2025-06-18', async () => {
  const s = new RawServer();
  await s.initialize('2025-06-18');
  await s.send([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' }]);
  const error = await s.next((m) => m.error?.code === -32600);
  assert.equal('id' in error, false);
  assert.match(error.error.message, /2025-03-26/);
  assert.equal(await s.close(), 0);
});

test('batches are processed on 2025-03-26', async () => {
  const s = new RawServer();
  const init = await s.initialize('2025-03-26');
  assert.equal(init.result.protocolVersion, '2025-03-26');
  await s.send([
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'no/such/method' },
  ]);
  const batch = await s.next((m) => Array.isArray(m));
  assert.equal(batch.length, 3);
  const byId = Object.fromEntries(batch.map((r) => [r.id, r]));
  assert.deepEqual(byId[1].result, {});
  assert.equal(byId[2].result.tools.length, 8);
  assert.equal(byId[3].error.code, -32601);
  assert.equal(await s.close(), 0);
});

test('unknown method -32601; requests before initialize get a prompt error', async () => {
  const s = new RawServer();
  const started = Date.now();
  await s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const early = await s.byId(1);
  assert.ok(early.error);
  assert.match(early.error.message, /initialize/);
  await s.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual((await s.byId(2)).result, {});
  await s.initialize();
  await s.send({ jsonrpc: '2.0', id: 3, method: 'prompts/list' });
  assert.equal((await s.byId(3)).error.code, -32601);
  assert.ok(Date.now() - started < 3000);
  assert.equal(await s.close(), 0);
});

test('server/discover without the per-request _meta is refused at once; initialize still follows', async () => {
  const s = new RawServer();
  const started = Date.now();
  await s.send({ jsonrpc: '2.0', id: 'probe', method: 'server/discover', params: {} });
  const response = await s.byId('probe', 2000);
  assert.equal(response.error.code, -32602);
  assert.match(response.error.message, /io\.modelcontextprotocol\/protocolVersion/);
  assert.ok(Date.now() - started < 1000);
  const init = await s.initialize('2025-11-25');
  assert.equal(init.result.protocolVersion, '2025-11-25');
  assert.equal(await s.close(), 0);
});

test('an unsupported protocol version is answered with the newest', async () => {
  const s = new RawServer();
  const init = await s.initialize('2099-01-01');
  assert.equal(init.result.protocolVersion, '2025-11-25');
  assert.equal(init.result.serverInfo.name, 'mcp-python-exec-sandbox');
  assert.equal(await s.close(), 0);
});

test('notifications/cancelled suppresses the response', async () => {
  const s = new RawServer();
  await s.initialize();
  await s.send({ jsonrpc: '2.0', id: 'run', method: 'tools/call',
    params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(20)', timeout_seconds: 60 } } });
  await new Promise((r) => setTimeout(r, 300));
  await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'run', reason: 'test' } });
  await s.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
  assert.deepEqual((await s.byId('after')).result, {});
  await assert.rejects(s.byId('run', 1500));
  assert.equal(await s.close(), 0);
});

test('invalid command-line values exit 2 with one line naming the flag', () => {
  for (const [args, flag] of [[['--max-timeout', '0'], '--max-timeout'],
    [['--default-timeout', '500'], '--default-timeout'],
    [['--max-output-bytes', '10'], '--max-output-bytes'],
    [['--sandbox-backend', 'jail'], '--sandbox-backend'],
    [['--no-such-flag'], '--no-such-flag']]) {
    const r = spawnSync(serverPath, args, { input: '', encoding: 'utf8' });
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stdout, '');
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.ok(lines[0].includes(flag), r.stderr);
  }
  const version = spawnSync(serverPath, ['--version'], { encoding: 'utf8' });
  assert.equal(version.status, 0);
  assert.match(version.stdout, /^mcp-python-exec-sandbox \d+\.\d+\.\d+\n$/);
});

test('--run FILE prints the result text and exits with the script exit code', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-run-'));
  try {
    const file = path.join(dir, 'script.py');
    fs.writeFileSync(file, 'print("hello from --run")\nraise SystemExit(3)\n');
    const r = spawnSync(serverPath, ['--run', file], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stdout, /^--- stdout ---\nhello from --run\n\n(--- notes ---\nthe memory limit [^\n]*\n)?--- exit_code: 3 ---\n--- duration_ms: \d+ ---\n/);
    const missing = spawnSync(serverPath, ['--run', path.join(dir, 'nope.py')], { encoding: 'utf8' });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--run/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--run refuses what is not a regular readable file, or is too big: exit 2, one line', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-run-'));
  try {
    const big = path.join(dir, 'big.py');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, 16 * 1024 * 1024 + 1);
    for (const [target, why] of [[dir, /is not a regular file/], ['/dev/zero', /is not a regular file/],
      [big, /at most 16 MiB/]]) {
      const r = spawnSync(serverPath, ['--run', target], { encoding: 'utf8', timeout: 20000 });
      assert.equal(r.status, 2, `${target}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0], /--run/);
      assert.match(lines[0], why);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('requests piped in before end of input are all answered, then the server exits 0', () => {
  // As `printf '...' | mcp-python-exec-sandbox` does: everything written at once, then EOF.
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(0.5)\nprint("first")' } } },
    { jsonrpc: '2.0', id: 3, method: 'tools/call',
      params: { name: 'execute_python', arguments: { script: 'print(6 * 7)' } } },
    // Its own timeout bounds how long the server stays after the end of input.
    { jsonrpc: '2.0', id: 4, method: 'tools/call',
      params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(600)', timeout_seconds: 2 } } },
  ].map((m) => JSON.stringify(m)).join('\n') + '\n';
  const started = Date.now();
  const r = spawnSync(serverPath, [], { input: lines, encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  const responses = new Map(r.stdout.trim().split('\n').map((l) => JSON.parse(l)).map((m) => [m.id, m]));
  assert.equal(responses.get(2)?.result?.structuredContent?.stdout, 'first\n', r.stdout);
  assert.equal(responses.get(3)?.result?.structuredContent?.stdout, '42\n', r.stdout);
  assert.equal(responses.get(4)?.result?.structuredContent?.timed_out, true, r.stdout);
  assert.ok(Date.now() - started < 30000);
});
