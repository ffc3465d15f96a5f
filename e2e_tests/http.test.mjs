// The Streamable HTTP transport with real clients and curl: the TypeScript SDK in the initialize
// era (sessions, DELETE, aborts), the header and status rules of both eras, DNS-rebinding and
// token refusals, runs killed when their stream closes, resumption after a broken connection,
// fair queueing between clients, and SIGTERM with a run in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { serverPath, textOf } from './lib/client.mjs';
import { startHttpServer } from './lib/http_server.mjs';
import { startHeartbeat } from './lib/heartbeat.mjs';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'e2e-http', version: '1' },
};

// curl -i: { status, headers (lower-case names), body }.
function curl(url, { method = 'POST', headers = {}, body } = {}) {
  const args = ['-sS', '-i', '--max-time', '30', '-X', method, url];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (body !== undefined) args.push('--data-binary', typeof body === 'string' ? body : JSON.stringify(body));
  const out = spawnSync('curl', args, { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const blocks = out.stdout.split('\r\n\r\n');
  const head = blocks[0].split('\r\n');
  const status = Number(head[0].split(' ')[1]);
  const parsed = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    parsed[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status, headers: parsed, body: blocks.slice(1).join('\r\n\r\n') };
}

// A conformant stateless POST.
function statelessHeaders(method, name) {
  const headers = {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
  };
  if (name) headers['Mcp-Name'] = name;
  return headers;
}
const rpc = (id, method, params = {}) => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } });

async function tsClient(url, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'mpes-e2e-http', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

test('TypeScript SDK over Streamable HTTP: session, tools, a run, DELETE', async () => {
  const server = await startHttpServer();
  try {
    const { client, transport } = await tsClient(server.url);
    assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
    assert.equal(client.getServerVersion().name, 'mcp-python-exec-sandbox');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['execute_python', 'validate_script', 'check_environment', 'create_session', 'fork_session', 'reset_session', 'close_session', 'list_sessions']);
    const result = await client.callTool({ name: 'execute_python', arguments: { script: 'print("over http")' } });
    assert.equal(result.structuredContent.stdout, 'over http\n');
    assert.match(textOf(result), /--- exit_code: 0 ---/);
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    await client.close();
    // The session is gone.
    const after = curl(server.url, { headers: { 'Content-Type': 'application/json', 'Mcp-Session-Id': sessionId },
      body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    assert.equal(after.status, 404);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('TypeScript SDK: an aborted call is cancelled and its run killed', async () => {
  const server = await startHttpServer();
  const heart = await startHeartbeat();
  try {
    const { client } = await tsClient(server.url);
    const controller = new AbortController();
    const call = client.callTool({ name: 'execute_python', arguments: { script: heart.script(), timeout_seconds: 120 } },
      undefined, { signal: controller.signal });
    await heart.waitForBeat();
    controller.abort();
    await assert.rejects(call);
    assert.ok(await heart.stopped(), 'the run kept running after the client cancelled it');
    const again = await client.callTool({ name: 'execute_python', arguments: { script: 'print(1)' } });
    assert.equal(again.structuredContent.stdout, '1\n');
    await client.close();
  } finally {
    heart.close();
    assert.equal((await server.stop()).code, 0);
  }
});

test('stateless era over HTTP: statuses and headers (curl)', async () => {
  const server = await startHttpServer();
  try {
    let r = curl(server.url, { headers: statelessHeaders('server/discover'), body: rpc(1, 'server/discover') });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /application\/json/);
    assert.equal(JSON.parse(r.body).result.supportedVersions[0], '2026-07-28');

    r = curl(server.url, { headers: statelessHeaders('tools/list'),
      body: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} } });
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.body).error.code, -32602);

    r = curl(server.url, { headers: { ...statelessHeaders('tools/list'), 'MCP-Protocol-Version': '2025-11-25' },
      body: rpc(3, 'tools/list') });
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.body).error.code, -32020);

    r = curl(server.url, { headers: statelessHeaders('tools/call', 'not_this_one'),
      body: rpc(4, 'tools/call', { name: 'execute_python', arguments: { script: 'print(1)' } }) });
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.body).error.code, -32020);

    const old = { ...META, 'io.modelcontextprotocol/protocolVersion': '2024-01-01' };
    r = curl(server.url, { headers: { ...statelessHeaders('tools/list'), 'MCP-Protocol-Version': '2024-01-01' },
      body: { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: old } } });
    assert.equal(r.status, 400);
    const unsupported = JSON.parse(r.body).error;
    assert.equal(unsupported.code, -32022);
    assert.equal(unsupported.data.requested, '2024-01-01');

    r = curl(server.url, { headers: statelessHeaders('ping'), body: rpc(6, 'ping') });
    assert.equal(r.status, 404);
    assert.equal(JSON.parse(r.body).error.code, -32601);

    r = curl(server.url, { headers: statelessHeaders('notifications/cancelled'),
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: META } } });
    assert.equal(r.status, 202);
    assert.equal(r.body, '');

    r = curl(server.url, { headers: statelessHeaders('tools/call', 'execute_python'),
      body: rpc(7, 'tools/call', { name: 'execute_python', arguments: { script: 'print(7)' } }) });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /text\/event-stream/);
    assert.equal(r.headers['x-accel-buffering'], 'no');
    const event = r.body.split('\n').find((l) => l.startsWith('data: ') && l.length > 7);
    const result = JSON.parse(event.slice(6)).result;
    assert.equal(result.resultType, 'complete');
    assert.equal(result.structuredContent.stdout, '7\n');

    r = curl(server.url, { method: 'GET', headers: { Accept: 'text/event-stream' } });
    assert.equal(r.status, 405);
    r = curl(server.url, { headers: { 'Content-Type': 'text/plain' }, body: 'x' });
    assert.equal(r.status, 415);
    r = curl(server.url.replace('/mcp', '/other'), { method: 'GET' });
    assert.equal(r.status, 404);
    r = curl(server.url.replace('/mcp', '/healthz'), { method: 'GET' });
    assert.equal(r.status, 200);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('initialize era over HTTP: session id, 400 without it, 404 unknown, 405 GET stream (curl)', async () => {
  const server = await startHttpServer();
  try {
    const init = curl(server.url, { headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 0, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } } });
    assert.equal(init.status, 200);
    const session = init.headers['mcp-session-id'];
    assert.match(session, /^[\x21-\x7e]{32,}$/);
    assert.equal(JSON.parse(init.body).result.protocolVersion, '2025-06-18');
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-06-18' };
    let r = curl(server.url, { headers: { ...headers, 'Mcp-Session-Id': session },
      body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    assert.equal(r.status, 202);
    r = curl(server.url, { headers, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    assert.equal(r.status, 400);
    r = curl(server.url, { headers: { ...headers, 'Mcp-Session-Id': 'f'.repeat(64) },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    assert.equal(r.status, 404);
    r = curl(server.url, { method: 'GET', headers: { 'Mcp-Session-Id': session, Accept: 'text/event-stream' } });
    assert.equal(r.status, 405);
    r = curl(server.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': session } });
    assert.ok(r.status >= 200 && r.status < 300);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('DNS rebinding: a foreign Origin or Host is refused with 403', async () => {
  const server = await startHttpServer();
  try {
    const body = rpc(1, 'server/discover');
    let r = curl(server.url, { headers: { ...statelessHeaders('server/discover'), Origin: 'https://evil.example.com' }, body });
    assert.equal(r.status, 403);
    assert.equal('id' in JSON.parse(r.body), false);
    r = curl(server.url, { headers: { ...statelessHeaders('server/discover'), Host: 'evil.example.com' }, body });
    assert.equal(r.status, 403);
    r = curl(server.url, { headers: { ...statelessHeaders('server/discover'), Origin: `http://localhost:${server.port}` }, body });
    assert.equal(r.status, 200);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('bearer token: 401 with WWW-Authenticate; beyond loopback only with a token or an opt-out', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-token-'));
  const tokenFile = path.join(dir, 'token');
  const token = 'e2e-' + 'x'.repeat(40);
  fs.writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const refused = spawnSync(serverPath, ['--transport', 'http', '--host', '0.0.0.0'], { encoding: 'utf8' });
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /--auth-token-file/);
  const server = await startHttpServer(['--auth-token-file', tokenFile]);
  try {
    const body = rpc(1, 'server/discover');
    let r = curl(server.url, { headers: statelessHeaders('server/discover'), body });
    assert.equal(r.status, 401);
    assert.match(r.headers['www-authenticate'], /^Bearer realm=/);
    r = curl(server.url, { headers: { ...statelessHeaders('server/discover'), Authorization: 'Bearer nope' }, body });
    assert.equal(r.status, 401);
    assert.match(r.headers['www-authenticate'], /invalid_token/);
    r = curl(server.url, { headers: { ...statelessHeaders('server/discover'), Authorization: `Bearer ${token}` }, body });
    assert.equal(r.status, 200);
    const { client } = await tsClient(server.url, { Authorization: `Bearer ${token}` });
    assert.equal((await client.listTools()).tools.length, 8);
    await client.close();
  } finally {
    assert.equal((await server.stop()).code, 0);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('stateless era: closing the response stream kills the run', async () => {
  const server = await startHttpServer();
  const heart = await startHeartbeat();
  try {
    const controller = new AbortController();
    const response = await fetch(server.url, { method: 'POST', headers: statelessHeaders('tools/call', 'execute_python'),
      body: JSON.stringify(rpc('long', 'tools/call', { name: 'execute_python', arguments: { script: heart.script(), timeout_seconds: 120 } })),
      signal: controller.signal });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /text\/event-stream/);
    await heart.waitForBeat();
    controller.abort();
    assert.ok(await heart.stopped(), 'the run kept running after its stream closed');
  } finally {
    heart.close();
    assert.equal((await server.stop()).code, 0);
  }
});

test('initialize era: a broken stream does not cancel; Last-Event-ID resumes it', async () => {
  const server = await startHttpServer();
  try {
    const init = curl(server.url, { headers: { 'Content-Type': 'application/json' },
      body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } } });
    const session = init.headers['mcp-session-id'];
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' };
    const controller = new AbortController();
    const response = await fetch(server.url, { method: 'POST', headers, signal: controller.signal,
      body: JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'tools/call',
        params: { name: 'execute_python', arguments: { script: 'import time\ntime.sleep(1.5)\nprint("still here")' } } }) });
    const reader = response.body.getReader();
    const { value } = await reader.read();
    const priming = /id: (\S+)/.exec(new TextDecoder().decode(value))[1];
    controller.abort();
    await new Promise((r) => setTimeout(r, 2500));  // the run finishes while nobody listens
    const resumed = curl(server.url, { method: 'GET', headers: { 'Mcp-Session-Id': session, Accept: 'text/event-stream',
      'Last-Event-ID': priming, 'MCP-Protocol-Version': '2025-11-25' } });
    assert.equal(resumed.status, 200);
    const data = resumed.body.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    assert.equal(data.length, 1);
    assert.equal(data[0].id, 'r');
    assert.equal(data[0].result.structuredContent.stdout, 'still here\n');
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('runs queue fairly between clients: one client\'s backlog does not hold up another', async () => {
  const server = await startHttpServer(['--max-concurrent-runs', '1']);
  try {
    const finished = [];
    const call = (localAddress, label, seconds) => new Promise((resolve, reject) => {
      const body = JSON.stringify(rpc(label, 'tools/call', { name: 'execute_python',
        arguments: { script: `import time\ntime.sleep(${seconds})` } }));
      const request = http.request(server.url, { method: 'POST', localAddress,
        headers: { ...statelessHeaders('tools/call', 'execute_python'), Accept: 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.on('data', (d) => { text += d; });
        response.on('end', () => { finished.push(label); resolve(JSON.parse(text)); });
      });
      request.on('error', reject);
      request.end(body);
    });
    const busy = [call('127.0.0.1', 'a1', 1), call('127.0.0.1', 'a2', 1), call('127.0.0.1', 'a3', 1)];
    await new Promise((r) => setTimeout(r, 300));
    const other = call('127.0.0.2', 'b1', 0.1);
    await Promise.all([...busy, other]);
    // b1 waits for the run in progress only, not for a's whole backlog.
    assert.ok(finished.indexOf('b1') <= 1, `completion order: ${finished.join(' ')}`);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('open-file limit: raised to the hard one at start; a --max-connections that cannot fit is refused', async () => {
  const refused = spawnSync('prlimit', ['--nofile=1024:1024', serverPath, '--transport', 'http', '--port', '0',
    '--max-connections', '2000'], { encoding: 'utf8', timeout: 20000 });
  assert.equal(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /--max-connections 2000 does not fit in the server's open-file limit \(1024.*ulimit -Hn/);
  // The default is lowered to fit instead, and said so.
  const lowered = await startHttpServer(['--max-concurrent-runs', '4'], { prefix: ['prlimit', '--nofile=300:300'] });
  try {
    assert.match(lowered.stderr(), /the default --max-connections 256 lowered to 172 to fit in the server's open-file limit \(300/);
  } finally {
    await lowered.stop();
  }

  // A soft limit of 256 under a hard one of 4096: 600 connections at once must not exhaust the
  // server (the HTTP library stops accepting for good after one failed accept()).
  const net = await import('node:net');
  const server = await startHttpServer(['--max-connections', '2000'], { prefix: ['prlimit', '--nofile=256:4096'] });
  try {
    const { port } = server;
    const limits = fs.readFileSync(`/proc/${server.child.pid}/limits`, 'utf8');
    assert.match(limits, /Max open files\s+4096\s+4096/, limits);
    const sockets = await Promise.all(Array.from({ length: 600 }, () => new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    })));
    for (const s of sockets) s.destroy();
    const health = await new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 10000 }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
      req.on('error', reject);
    });
    assert.equal(health, 200);
  } finally {
    await server.stop();
  }
});

// An accept that fails (here EMFILE: the server's soft open-file limit lowered under it to what
// it holds; ENOSPC when its user's epoll watches are used up) is retried: the server takes
// connections again once the cause has gone. (RESTinio 0.6 alone never accepted again.)
test('HTTP: after accepts fail for want of descriptors, the server accepts again', async () => {
  const net = await import('node:net');
  const server = await startHttpServer();
  try {
    const { port } = server;
    const pid = server.child.pid;
    const health = () => new Promise((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 5000 }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
      req.on('error', (e) => resolve(e.message));
    });
    assert.equal(await health(), 200);
    const [soft, hard] = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').match(/Max open files\s+(\d+)\s+(\d+)/).slice(1);
    const held = fs.readdirSync(`/proc/${pid}/fd`).length;
    const prlimit = (value) => {
      const r = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${value}:${hard}`], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    };
    prlimit(held);
    const sockets = await Promise.all(Array.from({ length: 3 }, () => new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1', () => resolve(sock));
      sock.on('error', reject);
    })));
    // The server's accept fails (the kernel completed the connections; the server cannot take them).
    const waitFor = async (re) => {
      for (let i = 0; i < 50 && !re.test(server.stderr()); i += 1) await new Promise((r) => setTimeout(r, 100));
      return server.stderr();
    };
    await waitFor(/accepting a connection failed/);
    for (const sock of sockets) sock.destroy();
    prlimit(soft);
    assert.equal(await health(), 200);
    // (and the accept did fail meanwhile: the test tested something)
    assert.match(server.stderr(), /accepting a connection failed: Too many open files; accepting again in 100 ms/);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

// Writes `text` on a new connection, then reads until the server closes it or `count` responses
// delimited by Content-Length have come: [{ status, headers, body }], and the bytes left over.
async function rawExchange(port, text, count, timeoutMs = 30000) {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let data = Buffer.alloc(0);
    const responses = [];
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`${responses.length} of ${count} responses within ${timeoutMs} ms`)); }, timeoutMs);
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve({ responses, rest: data.toString('latin1') }); };
    const parse = () => {
      for (;;) {
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = data.subarray(0, end).toString('latin1').split('\r\n');
        const headers = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
        }
        if (headers['content-length'] === undefined) return;  // not delimited: left in `rest`
        const length = Number(headers['content-length']);
        if (data.length < end + 4 + length) return;
        responses.push({ status: Number(head[0].split(' ')[1]), headers, body: data.subarray(end + 4, end + 4 + length).toString('utf8') });
        data = data.subarray(end + 4 + length);
        if (responses.length === count) finish();
      }
    };
    socket.on('data', (chunk) => { data = Buffer.concat([data, chunk]); parse(); });
    socket.on('end', finish);
    socket.on('error', reject);
  });
}

function rawPost(port, body, headers, version = 'HTTP/1.1') {
  const text = JSON.stringify(body);
  const lines = [`POST /mcp ${version}`, `Host: 127.0.0.1:${port}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${Buffer.byteLength(text)}`];
  return lines.join('\r\n') + '\r\n\r\n' + text;
}

test('pipelined requests on one connection: every one answered, in order, a run among them', async () => {
  const server = await startHttpServer();
  try {
    // A run first, so that the requests behind it wait in the connection's pipeline, then more
    // requests than the HTTP library's table of pipelined requests holds (4).
    const requests = [rawPost(server.port, rpc('run', 'tools/call', { name: 'execute_python', arguments: { script: 'import time; time.sleep(0.3); print(6 * 7)' } }),
      { ...statelessHeaders('tools/call', 'execute_python'), Accept: 'application/json' })];
    for (let i = 0; i < 11; i++) {
      requests.push(rawPost(server.port, rpc(i, 'tools/list'), { ...statelessHeaders('tools/list'), Accept: 'application/json' }));
    }
    const { responses } = await rawExchange(server.port, requests.join(''), requests.length);
    assert.equal(responses.length, 12, server.stderr().slice(-2000));
    const bodies = responses.map((r) => JSON.parse(r.body));
    assert.equal(bodies[0].id, 'run');
    assert.equal(bodies[0].result.structuredContent.stdout, '42\n');
    assert.deepEqual(bodies.slice(1).map((b) => b.id), Array.from({ length: 11 }, (_, i) => i));
    for (const b of bodies.slice(1)) assert.ok(b.result.tools.length > 0);
    assert.doesNotMatch(server.stderr(), /response_context_table is full/);
  } finally {
    await server.stop();
  }
});

test('a client that hangs up with 6 runs pipelined on its connection has them all killed at once', async () => {
  const server = await startHttpServer(['--max-concurrent-runs', '8']);
  const net = await import('node:net');
  const engine = async () => {
    const r = await fetch(server.url, { method: 'POST', headers: { ...statelessHeaders('tools/call', 'check_environment'), Accept: 'application/json' },
      body: JSON.stringify(rpc('env', 'tools/call', { name: 'check_environment', arguments: {} })) });
    return (await r.json()).result.structuredContent.engine;
  };
  try {
    const requests = Array.from({ length: 6 }, (_, i) => rawPost(server.port,
      rpc(`p${i}`, 'tools/call', { name: 'execute_python', arguments: { script: 'import time; time.sleep(60)', timeout_seconds: 120 } }),
      statelessHeaders('tools/call', 'execute_python'))).join('');
    const socket = await new Promise((resolve, reject) => {
      const s = net.connect(server.port, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
    socket.write(requests);
    let e;
    for (let i = 0; i < 100; i++) {
      e = await engine();
      if (e.runs_in_flight + e.runs_queued >= 6) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(e.runs_in_flight + e.runs_queued >= 6, JSON.stringify(e));
    socket.destroy();
    const closed = Date.now();
    for (;;) {
      e = await engine();
      if (e.runs_in_flight + e.runs_queued === 0) break;
      assert.ok(Date.now() - closed < 5000, `runs still going 5 s after the hang-up: ${JSON.stringify(e)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await server.stop();
  }
});

test('HTTP/1.0 (and Connection: close): an event stream comes whole with Content-Length, never chunked', async () => {
  const server = await startHttpServer();
  try {
    const headers = { ...statelessHeaders('tools/call', 'execute_python'), Accept: 'text/event-stream' };
    const call = rpc('old', 'tools/call', { name: 'execute_python', arguments: { script: 'print(6 * 7)' } });
    for (const [version, extra] of [['HTTP/1.0', {}], ['HTTP/1.1', { Connection: 'close' }]]) {
      const { responses, rest } = await rawExchange(server.port, rawPost(server.port, call, { ...headers, ...extra }, version), 1);
      assert.equal(responses.length, 1, `${version}: no Content-Length response; got ${rest.slice(0, 300)}`);
      const [r] = responses;
      assert.equal(r.status, 200);
      assert.equal(r.headers['transfer-encoding'], undefined);
      assert.match(r.headers['content-type'], /text\/event-stream/);
      const message = JSON.parse(r.body.split('\n').find((l) => l.startsWith('data: {')).slice(6));
      assert.equal(message.result.structuredContent.stdout, '42\n');
    }
  } finally {
    await server.stop();
  }
});

test('SIGTERM with a run in flight: it is answered, the server exits 0 within 2 s', async () => {
  const server = await startHttpServer();
  const response = await fetch(server.url, { method: 'POST', headers: statelessHeaders('tools/call', 'execute_python'),
    body: JSON.stringify(rpc('t', 'tools/call', { name: 'execute_python', arguments: { script: 'import time\nprint("started", flush=True)\ntime.sleep(60)', timeout_seconds: 120 } })) });
  await new Promise((r) => setTimeout(r, 1500));
  const started = Date.now();
  server.child.kill('SIGTERM');
  const text = await response.text();
  const { code } = await server.exited;
  assert.equal(code, 0);
  assert.ok(Date.now() - started < 2000, `exit took ${Date.now() - started} ms`);
  const message = JSON.parse(text.split('\n').find((l) => l.startsWith('data: {')).slice(6));
  assert.equal(message.id, 't');
  assert.equal(message.result.structuredContent.end_reason, 'cancelled');
  assert.equal(message.result.structuredContent.stdout, 'started\n');
});
