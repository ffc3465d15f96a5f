// A stdio client that writes many calls and reads nothing: the server's memory stays within its
// stated intake bound (README, "Bounded replies"), the client's writes are held back, and once it
// reads again every call gets its reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { serverPath, withBackend } from './lib/client.mjs';
import { tree } from './lib/procs.mjs';

const MiB = 1 << 20;

// Resident memory of one process in bytes (0 once it is gone).
function rss(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

// The server's intake bound for these flags (mcp/intake.cpp): the larger of 64 MiB and one
// reply bound more than the run slots; a reply's bound is 7 x --max-output-bytes, the figures
// and output files in base64, and 128 KiB.
function intakeBound({ maxOutput = 102400, images = 4, files = 10 * MiB, slots }) {
  const base64 = (n) => Math.ceil(n / 3) * 4;
  const reply = 7 * maxOutput + images * base64(MiB) + base64(files) + 128 * 1024;
  return Math.max(64 * MiB, (slots + 1) * reply);
}

test('1500 calls from a client that reads nothing: bounded memory, writes held back, every reply after', async (t) => {
  const N = 1500;
  const slots = 4;
  const child = spawn(serverPath, withBackend(['--max-concurrent-runs', String(slots)]),
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const messages = [];
  let buffer = '';
  const onData = (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      messages.push(JSON.parse(buffer.slice(0, nl)));
      buffer = buffer.slice(nl + 1);
    }
  };
  child.stdout.on('data', onData);
  // Replies only: the server may also send notifications (e.g. a warning logged while it works).
  const replies = () => messages.filter((m) => m.id !== undefined);
  const waitReplies = async (count, timeoutMs) => {
    const deadline = Date.now() + timeoutMs;
    while (replies().length < count) {
      assert.ok(Date.now() < deadline, `${replies().length} of ${count} replies; stderr: ${stderr.slice(-2000)}`);
      await sleep(50);
    }
  };
  const write = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  const call = (id, script) => ({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'execute_python', arguments: { script } } });
  try {
    write({ jsonrpc: '2.0', id: 'init', method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bp', version: '1' } } });
    write({ jsonrpc: '2.0', method: 'notifications/initialized' });
    // One call first: the zygote is warm and the server at its resting size.
    write(call('warm', 'print("warm")'));
    await waitReplies(2, 60000);
    assert.equal(replies()[1].result.structuredContent.stdout, 'warm\n');
    await sleep(1000);
    const server = child.pid;
    const baseServer = rss(server);
    const baseTree = tree(server).reduce((sum, p) => sum + rss(p), 0);

    // Stop reading, then write every call at once (1 KiB of comment each, so that together they
    // are far more than a pipe holds).
    child.stdout.off('data', onData);
    child.stdout.pause();
    for (let i = 0; i < N; i++) {
      write(call(i, `# ${'p'.repeat(1024)}\nimport sys\nsys.stdout.write("${i} " + "x" * 65536 + "\\n")`));
    }
    // Sample while the server works, until its memory has not grown for 5 s (it is stalled).
    let peakServer = 0;
    let peakTree = 0;
    let lastGrowth = Date.now();
    const deadline = Date.now() + 180000;
    while (Date.now() - lastGrowth < 5000) {
      assert.ok(Date.now() < deadline, 'the server never settled');
      const s = rss(server);
      const all = tree(server).reduce((sum, p) => sum + rss(p), 0);
      if (s > peakServer + MiB) lastGrowth = Date.now();
      peakServer = Math.max(peakServer, s);
      peakTree = Math.max(peakTree, all);
      await sleep(100);
    }
    const unread = child.stdin.writableLength;
    const bound = intakeBound({ slots });
    t.diagnostic(`server RSS ${(baseServer / MiB).toFixed(1)} MiB at rest, peak ${(peakServer / MiB).toFixed(1)} MiB ` +
      `(+${((peakServer - baseServer) / MiB).toFixed(1)}); with its zygotes and runs ${(baseTree / MiB).toFixed(1)} -> ` +
      `${(peakTree / MiB).toFixed(1)} MiB; intake bound ${(bound / MiB).toFixed(1)} MiB; ` +
      `${unread} bytes of requests not taken by the server`);
    // What the server holds beyond its resting size: the intake bound, one held request line
    // (these are small) and one read buffer; 16 MiB for the allocator's slack.
    assert.ok(peakServer - baseServer < bound + 16 * MiB,
      `the server grew by ${((peakServer - baseServer) / MiB).toFixed(1)} MiB`);
    assert.ok(peakTree - baseTree < bound + 16 * MiB + slots * 64 * MiB,
      `the server and its zygotes grew by ${((peakTree - baseTree) / MiB).toFixed(1)} MiB`);
    assert.ok(unread > 0, 'the server stopped taking requests: the client\'s writes wait');

    // Read again: every call is answered, each with its own output.
    child.stdout.on('data', onData);
    child.stdout.resume();
    await waitReplies(2 + N, 600000);
    const byId = new Map(replies().slice(2).map((m) => [m.id, m]));
    assert.equal(byId.size, N, 'one reply per call');
    for (let i = 0; i < N; i++) {
      const reply = byId.get(i);
      assert.ok(reply, `a reply for call ${i}`);
      const sc = reply.result?.structuredContent;
      assert.ok(sc, `call ${i}: ${JSON.stringify(reply).slice(0, 500)}`);
      assert.equal(sc.exit_code, 0, `call ${i}: ${JSON.stringify(sc).slice(0, 500)}`);
      assert.equal(sc.stdout, `${i} ${'x'.repeat(65536)}\n`, `call ${i}'s own output`);
    }
    child.stdin.end();
    assert.equal(await exited, 0, stderr.slice(-2000));
  } finally {
    child.kill('SIGKILL');
  }
});

// The same over Streamable HTTP: a client of an initialize-era session that sends calls and never
// reads their answers (it hangs up after each request; its runs go on and their answers wait in
// the session's resumable streams). Once the session's unsent answers reach the per-client bound
// (mcp/http/output_budget.h: the intake bound above), its new calls are refused with 429 and
// Retry-After, not buffered: the server's memory stays within the bound. Another client is served
// meanwhile. When the client reads (resumes its streams), every accepted call has its answer and
// new calls are taken again.
test('HTTP: a session that never reads its answers is refused new calls at its bound, then served again', async (t) => {
  const { startHttpServer } = await import('./lib/http_server.mjs');
  const net = await import('node:net');
  const slots = 4;
  const maxOutput = MiB;
  const server = await startHttpServer(withBackend(['--max-concurrent-runs', String(slots), '--max-output-bytes',
    String(maxOutput), '--max-images', '0', '--max-output-file-bytes', '0']));
  const bound = Math.max(64 * MiB, (slots + 1) * (7 * maxOutput + 128 * 1024));
  const host = `127.0.0.1:${server.port}`;
  const legacyHeaders = (session) => ({
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2025-11-25', ...(session ? { 'Mcp-Session-Id': session } : {}) });
  const call = (id, script) => ({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'execute_python', arguments: { script } } });
  // Its answer comes after the client has hung up.
  const bigScript = (i) => `import sys, time\ntime.sleep(0.5)\nsys.stdout.write("${i} " + "x" * ${maxOutput - 64})\n`;
  // Answered as one JSON object: this client reads.
  const post = (session, body, accept = 'application/json') => fetch(server.url, {
    method: 'POST', headers: { ...legacyHeaders(session), Accept: accept }, body: JSON.stringify(body) });
  // A stateless client (another one), to see what the engine is doing.
  const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const engineState = async () => {
    const r = await fetch(server.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'check_environment' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'env', method: 'tools/call', params: { name: 'check_environment', arguments: {}, _meta: META } }) });
    return (await r.json()).result.structuredContent.engine;
  };
  // Writes one request on a connection of its own, then hangs up without reading anything.
  const sendAndHangUp = (session, body) => new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const socket = net.connect(server.port, '127.0.0.1', () => {
      socket.write(`POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
        'Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n' +
        `Mcp-Session-Id: ${session}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`, () => {
        setTimeout(() => { socket.destroy(); resolve(); }, 50);
      });
    });
    socket.pause();
    socket.on('error', reject);
  });
  try {
    const init = await post(undefined, { jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bp-http', version: '1' } } });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    const warm = await (await post(session, call('warm', 'print("warm")'))).json();
    assert.equal(warm.result.structuredContent.stdout, 'warm\n');
    await sleep(1000);
    const base = rss(server.child.pid);

    // 96 calls of about 2 MiB of answer each, four at a time, each four sent once the engine is idle
    // again: three times what the bound lets wait.
    const M = 96;
    let peak = base;
    for (let i = 0; i < M; i += slots) {
      await Promise.all(Array.from({ length: slots }, (_, k) => sendAndHangUp(session, call(i + k, bigScript(i + k)))));
      for (let w = 0; w < 400; w++) {
        const e = await engineState();
        peak = Math.max(peak, rss(server.child.pid));
        if (e.runs_in_flight === 0 && e.runs_queued === 0) break;
        await sleep(50);
      }
    }
    await sleep(500);
    peak = Math.max(peak, rss(server.child.pid));
    t.diagnostic(`server RSS ${(base / MiB).toFixed(1)} MiB at rest, peak ${(peak / MiB).toFixed(1)} MiB ` +
      `(+${((peak - base) / MiB).toFixed(1)}); per-client bound ${(bound / MiB).toFixed(1)} MiB; ${M} calls of ~2 MiB sent`);
    // The bound, plus the answers of the calls in flight when it was reached, plus slack.
    assert.ok(peak - base < bound + slots * 2 * 2 * MiB + 32 * MiB, `the server grew by ${((peak - base) / MiB).toFixed(1)} MiB`);

    // Its next call is refused, saying why and when to retry; another client is served.
    const refused = await post(session, call('late', 'print("late")'));
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match((await refused.json()).error.message, /not read yet .*per client/);
    const other = await fetch(server.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'execute_python' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'o', method: 'tools/call', params: { name: 'execute_python', arguments: { script: 'print("other")' }, _meta: META } }) });
    assert.equal((await other.json()).result.structuredContent.stdout, 'other\n');

    // The client reads: each stream it started is resumed from its beginning, and each accepted
    // call has its whole answer there. Streams are numbered from 1 in the session.
    const answered = new Set();
    for (let s = 1; ; s++) {
      const r = await fetch(server.url, { headers: { ...legacyHeaders(session), Accept: 'text/event-stream', 'Last-Event-ID': `${s}-0` } });
      if (r.status === 400) break;
      assert.equal(r.status, 200);
      const body = await r.text();
      const data = body.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
      const result = data.find((m) => m.id !== undefined);
      assert.ok(result?.result?.structuredContent, `stream ${s}: ${body.slice(0, 300)}`);
      const sc = result.result.structuredContent;
      assert.equal(sc.stdout, `${result.id} ${'x'.repeat(maxOutput - 64)}`, `stream ${s}: call ${result.id}'s own output`);
      answered.add(result.id);
    }
    t.diagnostic(`${answered.size} of ${M} calls accepted and answered on resumption`);
    assert.ok(answered.size < M, 'calls past the bound were refused');
    assert.ok(answered.size * 2 * MiB >= bound - 8 * MiB, `only ${answered.size} calls were taken before the bound`);
    // And it is served again.
    const again = await (await post(session, call('again', 'print("again")'))).json();
    assert.equal(again.result.structuredContent.stdout, 'again\n');
  } finally {
    await server.stop();
  }
});

// A JSON-RPC batch (2025-03-26) is answered by one array, so its calls' replies are held until
// its last call ends: its calls start within the intake bound, and the ones that would take the
// batch past it are refused (not run), each with its own error in the array.
const BATCH_FLAGS = ['--max-concurrent-runs', '2', '--max-output-bytes', String(MiB), '--max-images', '0',
  '--max-output-file-bytes', '0'];
const BATCH_BOUND = intakeBound({ maxOutput: MiB, images: 0, files: 0, slots: 2 });
const BATCH_REPLY = 7 * MiB + 128 * 1024;  // one call's reply bound under BATCH_FLAGS
const heavyBatch = (n) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call',
  params: { name: 'execute_python', arguments: { script: `import sys; sys.stdout.write("${i} " + "y" * 1048000)` } } }));

function checkBoundedBatch(reply, n) {
  assert.ok(Array.isArray(reply), 'one array answers the batch');
  assert.equal(reply.length, n);
  assert.deepEqual(reply.map((r) => r.id).sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i));
  const ran = reply.filter((r) => r.result);
  const refused = reply.filter((r) => r.error);
  for (const r of ran) assert.equal(r.result.structuredContent.stdout, `${r.id} ` + 'y'.repeat(1048000));
  for (const r of refused) {
    assert.equal(r.error.code, -32000);
    assert.match(r.error.message, /replies this client has not read yet .* nothing of it ran\. Send it again in another message/);
  }
  assert.ok(refused.length > 0, 'calls past the bound are refused');
  // What the batch held stayed within the bound: the calls that ran, at their real size, plus one
  // call's bound at most.
  const held = ran.reduce((sum, r) => sum + JSON.stringify(r).length, 0);
  assert.ok(held <= BATCH_BOUND + BATCH_REPLY, `the batch held ${(held / MiB).toFixed(1)} MiB`);
  assert.ok(held > BATCH_BOUND / 2, `it used the bound (${(held / MiB).toFixed(1)} MiB held)`);
}

test('stdio: a batch of output-heavy calls past the intake bound has the calls beyond it refused, the rest answered', async () => {
  const { RawServer } = await import('./lib/raw_server.mjs');
  const s = new RawServer(withBackend(BATCH_FLAGS));
  await s.initialize('2025-03-26');
  const n = 60;
  await s.send(heavyBatch(n));
  checkBoundedBatch(await s.next((m) => Array.isArray(m), 120000), n);
  // The server goes on serving, the refused calls can be sent again.
  await s.send({ jsonrpc: '2.0', id: 'after', method: 'tools/call', params: { name: 'execute_python', arguments: { script: 'print(6 * 7)' } } });
  assert.equal((await s.byId('after', 30000)).result.structuredContent.stdout, '42\n');
  assert.equal(await s.close(), 0);
});

test('HTTP: a session\'s batch past its client bound has the calls beyond it refused, and its held replies count', async () => {
  const { startHttpServer } = await import('./lib/http_server.mjs');
  const server = await startHttpServer(withBackend(BATCH_FLAGS));
  const headers = (session) => ({ 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2025-03-26', ...(session ? { 'Mcp-Session-Id': session } : {}) });
  try {
    const init = await fetch(server.url, { method: 'POST', headers: headers(), body: JSON.stringify({ jsonrpc: '2.0', id: 0,
      method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batch', version: '1' } } }) });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    await fetch(server.url, { method: 'POST', headers: headers(session), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const n = 60;
    const r = await fetch(server.url, { method: 'POST', headers: { ...headers(session), Accept: 'application/json' }, body: JSON.stringify(heavyBatch(n)) });
    assert.equal(r.status, 200);
    checkBoundedBatch(await r.json(), n);
    const after = await fetch(server.url, { method: 'POST', headers: { ...headers(session), Accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'tools/call', params: { name: 'execute_python', arguments: { script: 'print(6 * 7)' } } }) });
    assert.equal((await after.json()).result.structuredContent.stdout, '42\n');
  } finally {
    await server.stop();
  }
});
