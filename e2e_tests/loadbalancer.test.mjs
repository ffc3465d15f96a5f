// Beyond one machine: three server processes behind HAProxy (Debian's), stateless 2026-07-28
// calls spread over them, one replica killed (SIGKILL) mid-run. Only the calls that replica had
// in flight may fail, each with an error (never a hang); the rest complete, and the load was
// spread over the replicas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startHttpServer } from './lib/http_server.mjs';

const CALLS = Number(process.env.MPES_LB_CALLS ?? 300);
const IN_FLIGHT = 12;
const KILL_AFTER = Math.floor(CALLS / 3);
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

function haproxyPath() {
  for (const p of ['/usr/sbin/haproxy', '/usr/bin/haproxy']) if (fs.existsSync(p)) return p;
  return null;
}

async function freePort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function waitFor(pred, timeoutMs, what) {
  const until = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test(`${CALLS} calls through HAProxy over three replicas, one killed mid-run`, { timeout: 300000 }, async () => {
  const haproxy = haproxyPath();
  assert.ok(haproxy, 'HAProxy is not installed: run scripts/install-deps.sh');
  const replicas = [];
  for (let i = 0; i < 3; i += 1) replicas.push(await startHttpServer());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-lb-'));
  const lbPort = await freePort();
  const config = [
    'global', '  maxconn 1000',
    'defaults', '  mode http', '  timeout connect 2s', '  timeout client 120s', '  timeout server 120s',
    // A connection per request to the replicas: a request after the kill finds the port closed
    // and is sent to another replica, instead of going out on a pooled connection to the dead one.
    '  option redispatch', '  retries 3', '  http-reuse never',
    'frontend mcp', `  bind 127.0.0.1:${lbPort}`, '  default_backend replicas',
    'backend replicas', '  balance roundrobin',
    '  option httpchk', '  http-check send meth GET uri /healthz hdr Host localhost',
    // Which replica answered, for the spread (a header of the balancer, not of the server).
    '  http-response set-header X-Replica %s',
    '  default-server inter 300ms fall 2 rise 2',
    ...replicas.map((r, i) => `  server r${i} 127.0.0.1:${r.port} check`),
  ].join('\n') + '\n';
  fs.writeFileSync(path.join(dir, 'haproxy.cfg'), config);
  const check = spawnSync(haproxy, ['-c', '-f', path.join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  const lb = spawn(haproxy, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let lbLog = '';
  lb.stdout.on('data', (d) => { lbLog += d; });
  lb.stderr.on('data', (d) => { lbLog += d; });
  const url = `http://127.0.0.1:${lbPort}/mcp`;
  try {
    await waitFor(async () => {
      try { return (await fetch(url.replace('/mcp', '/healthz'))).ok; } catch { return false; }
    }, 10000, 'HAProxy');

    const results = new Array(CALLS);
    let next = 0;
    let completed = 0;
    let killedAt = null;
    const inFlight = new Set();
    const victim = 1;
    const call = async (i) => {
      const started = Date.now();
      inFlight.add(i);
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json',
            'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'execute_python' },
          body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'execute_python',
            arguments: { script: `import time\ntime.sleep(0.2)\nprint(${i})` }, _meta: META } }),
          signal: AbortSignal.timeout(60000),
        });
        const text = await response.text();
        let ok = false;
        try {
          const body = JSON.parse(text);
          ok = response.status === 200 && body.id === i && body.result?.structuredContent?.stdout === `${i}\n`;
        } catch { /* not JSON: an error page */ }
        results[i] = { ok, status: response.status, replica: response.headers.get('x-replica'), started };
      } catch (error) {
        results[i] = { ok: false, status: 0, error: `${error}${error.cause ? ` (${error.cause.code ?? error.cause.message})` : ""}`, started };
      } finally {
        inFlight.delete(i);
        completed += 1;
      }
    };
    let inFlightAtKill = 0;
    let killing = false;
    const worker = async () => {
      while (next < CALLS) {
        if (completed >= KILL_AFTER && !killing) {
          // Calls that start until the replica is really gone count as in flight at the kill.
          killing = true;
          replicas[victim].child.kill('SIGKILL');
          await replicas[victim].exited;
          killedAt = Date.now();
          inFlightAtKill = inFlight.size + [...results].filter((r) => r && !r.ok).length;
        }
        const i = next;
        next += 1;
        await call(i);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));

    const failed = results.map((r, i) => ({ ...r, i })).filter((r) => !r.ok);
    const before = results.filter((r) => r.started < killedAt);
    const byReplica = {};
    for (const r of results) if (r.ok) byReplica[r.replica] = (byReplica[r.replica] ?? 0) + 1;
    console.log(`replicas: ${JSON.stringify(byReplica)}; failed: ${failed.length} of ${CALLS} ` +
      `(${inFlightAtKill} calls in flight over all replicas at the kill): ${JSON.stringify(failed.map((f) => [f.i, f.status, f.error]))}`);
    assert.ok(killedAt !== null, 'the replica was never killed');
    // Only calls in flight when the replica died may fail, and each failed with an answer (an
    // HTTP error from the balancer or a cut connection), not a hang.
    assert.ok(failed.length <= inFlightAtKill, `${failed.length} failures, ${inFlightAtKill} in flight at the kill`);
    for (const f of failed) {
      assert.ok(f.started <= killedAt, `call ${f.i} started after the kill and still failed (${f.status} ${f.error ?? ''})`);
      assert.ok(f.status === 0 || f.status >= 500, `call ${f.i} failed with status ${f.status}`);
    }
    // Everything after the kill went to the two survivors and succeeded.
    const after = results.filter((r) => r.started > killedAt);
    assert.ok(after.length >= CALLS / 2, `only ${after.length} calls after the kill`);
    assert.ok(after.every((r) => r.ok && r.replica !== `r${victim}`));
    // The spread: every replica served calls before the kill, the survivors a fair share overall.
    assert.ok(before.some((r) => r.ok && r.replica === `r${victim}`), 'the killed replica never served');
    for (const name of ['r0', 'r2']) {
      assert.ok((byReplica[name] ?? 0) >= CALLS / 4, `${name} served ${byReplica[name] ?? 0} of ${CALLS}`);
    }
  } finally {
    lb.kill('SIGTERM');
    for (const [i, r] of replicas.entries()) {
      const { code, signal } = await r.stop();
      if (i !== 1) assert.equal(code, 0, `replica ${i} exited with ${code ?? signal}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
