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
