// Sessions and files end to end through the MCP SDK client: state kept between calls, snapshots
// rewound and forked, failed steps leaving the session as it was, threads turning snapshots off,
// limits and idle expiry, input/output files (hostile paths and planted symlinks included), and
// one HTTP client never reaching another's session.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connect, textOf } from './lib/client.mjs';
import { startHttpServer } from './lib/http_server.mjs';
import { RawServer } from './lib/raw_server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function call(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 300000 });
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

async function createSession(client, args = {}) {
  const r = await call(client, 'create_session', args);
  assert.equal(r.result.isError, false, r.text);
  assert.match(r.sc.session_id, /^[0-9a-f]{32}$/, r.text);
  assert.ok(r.text.includes(r.sc.session_id), r.text);
  return r.sc.session_id;
}

const step = (client, session_id, script, extra = {}) =>
  call(client, 'execute_python', { script, session_id, ...extra });

// The repr of a step's last expression; fails with the step's whole text when it has none.
async function valueOf(pending) {
  const r = await pending;
  assert.ok(r.sc.return_value, r.text);
  return r.sc.return_value.repr;
}

describe('sessions over stdio', () => {
  let conn;
  before(async () => {
    conn = await connect(['--memory-limit-mb', '512', '--max-sessions', '6']);
  });
  after(async () => {
    await conn?.client.close();
  });

  test('the tools are listed with their schemas', async () => {
    const { tools } = await conn.client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['create_session', 'fork_session', 'reset_session', 'close_session', 'list_sessions']) {
      assert.ok(names.includes(n), names.join(','));
    }
    const exec = tools.find((t) => t.name === 'execute_python');
    for (const p of ['session_id', 'input_files', 'output_files']) assert.ok(exec.inputSchema.properties[p], p);
  });

  test('a DataFrame of 10^6 rows is loaded once and answers 100 queries without reloading', async () => {
    const id = await createSession(conn.client, { dependencies: ['pandas'] });
    const load = await step(conn.client, id, `
import numpy as np, pandas as pd
loads = globals().get('loads', 0) + 1
df = pd.DataFrame({'a': np.arange(10**6), 'b': np.arange(10**6) % 7})
len(df)
`);
    assert.equal(load.sc.exit_code, 0, load.text);
    assert.equal(load.sc.return_value.repr, '1000000', load.text);
    assert.equal(load.sc.session.step, 1);
    assert.equal(load.sc.session.kept, true);
    assert.equal(load.sc.execution_path, 'session');
    const first = await step(conn.client, id, '[loads, id(df)]');
    const [loads0, dfId] = first.sc.return_value.json;
    assert.equal(loads0, 1, first.text);
    for (let i = 0; i < 100; i++) {
      const row = (i * 9973) % 1000000;
      const q = await step(conn.client, id, `[loads, id(df), int(df.a.iloc[${row}] + df.b.iloc[${row}])]`);
      assert.equal(q.sc.exit_code, 0, q.text);
      const value = q.sc.return_value.json;
      assert.deepEqual(value, [1, dfId, row + (row % 7)], q.text);
      assert.equal(q.sc.session.step, i + 3);
    }
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a step that corrupts state is rewound with reset_session (and step 0 is fresh)', async () => {
    const id = await createSession(conn.client);
    assert.equal((await step(conn.client, id, 'x = 41\nimport json')).sc.session.step, 1);
    const broken = await step(conn.client, id, 'x = "broken"\ndel json');
    assert.equal(broken.sc.session.step, 2);
    assert.equal((await step(conn.client, id, 'x + 1')).sc.exit_code, 1);  // step 3: TypeError, kept
    const reset = await call(conn.client, 'reset_session', { session_id: id, step: 1 });
    assert.equal(reset.result.isError, false, reset.text);
    assert.match(reset.text, /files in the work dir are not rewound/);
    const again = await step(conn.client, id, 'x + 1, json.dumps([1])');
    assert.equal(again.sc.exit_code, 0, again.text);
    assert.match(again.sc.return_value?.repr, /42, '\[1\]'/, again.text);
    assert.equal(again.sc.session.step, 2);  // numbered on from the step rewound to
    await call(conn.client, 'reset_session', { session_id: id, step: 0 });
    const fresh = await step(conn.client, id, "'x' in globals()");
    assert.equal(fresh.sc.return_value?.repr, 'False', fresh.text);
    const bad = await call(conn.client, 'reset_session', { session_id: id, step: 99 });
    assert.equal(bad.result.isError, true);
    assert.match(bad.text, /99/);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('two forks of one step diverge independently of each other and of their origin', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'items = [0]');
    await step(conn.client, id, 'items.append("origin")');
    const forks = [];
    for (let i = 0; i < 2; i++) {
      const f = await call(conn.client, 'fork_session', { session_id: id, step: 1 });
      assert.equal(f.result.isError, false, f.text);
      assert.notEqual(f.sc.session_id, id);
      forks.push(f.sc.session_id);
    }
    await step(conn.client, forks[0], 'items.append("a")');
    await step(conn.client, forks[1], 'items.append("b"); items.append("b")');
    assert.equal(await valueOf(step(conn.client, forks[0], 'items')), "[0, 'a']");
    assert.equal(await valueOf(step(conn.client, forks[1], 'items')), "[0, 'b', 'b']");
    assert.equal(await valueOf(step(conn.client, id, 'items')), "[0, 'origin']");
    // Forking without a step continues from the latest.
    const latest = await call(conn.client, 'fork_session', { session_id: id });
    assert.equal(await valueOf(step(conn.client, latest.sc.session_id, 'items')), "[0, 'origin']");
    // Closing the origin leaves its forks alive.
    await call(conn.client, 'close_session', { session_id: id });
    assert.equal(await valueOf(step(conn.client, forks[0], 'len(items)')), '2');
    for (const f of [...forks, latest.sc.session_id]) await call(conn.client, 'close_session', { session_id: f });
  });

  test('forks of one step keep their states round after round (a step racing its own start report)', async () => {
    // A fork's step can end before its parent's report that it started is read; its state must
    // survive that, every time (this lost it about one round in eight).
    const id = await createSession(conn.client);
    await step(conn.client, id, 'items = [0]');
    for (let round = 0; round < 25; round++) {
      const forks = [];
      for (let i = 0; i < 2; i++) {
        const f = await call(conn.client, 'fork_session', { session_id: id, step: 1 });
        assert.equal(f.result.isError, false, f.text);
        forks.push(f.sc.session_id);
      }
      const a = await step(conn.client, forks[0], 'items.append("a")');
      assert.equal(a.sc.session?.kept, true, a.text);
      const b = await step(conn.client, forks[1], 'items.append("b")');
      assert.equal(b.sc.session?.kept, true, b.text);
      assert.equal(await valueOf(step(conn.client, forks[0], 'items')), "[0, 'a']", `round ${round}`);
      assert.equal(await valueOf(step(conn.client, forks[1], 'items')), "[0, 'b']", `round ${round}`);
      for (const f of forks) await call(conn.client, 'close_session', { session_id: f });
    }
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a timed-out, a crashed, an os._exit and an out-of-memory step leave the session at its previous state', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 41');
    const timeout = await step(conn.client, id, 'import time\nx = "changed"\ntime.sleep(60)', { timeout_seconds: 1 });
    assert.equal(timeout.sc.timed_out, true, timeout.text);
    assert.equal(timeout.sc.session.kept, false, timeout.text);
    assert.equal(timeout.sc.session.step, 1);
    assert.match(timeout.text, /session continues from step 1/);
    const crash = await step(conn.client, id, 'import ctypes\nx = "changed"\nctypes.string_at(0)');
    assert.notEqual(crash.sc.exit_code, 0, crash.text);
    assert.equal(crash.sc.session.kept, false, crash.text);
    const exit = await step(conn.client, id, 'import os\nx = "changed"\nos._exit(3)');
    assert.equal(exit.sc.exit_code, 3, exit.text);
    assert.equal(exit.sc.session.kept, false, exit.text);
    const oom = await step(conn.client, id, 'x = "changed"\nblob = bytearray(900 << 20)', { timeout_seconds: 60 });
    assert.equal(oom.sc.end_reason, 'memory_limit', oom.text);
    assert.equal(oom.sc.session.kept, false, oom.text);
    const after = await step(conn.client, id, 'x + 1');
    assert.equal(after.sc.return_value?.repr, '42', after.text);
    assert.equal(after.sc.session.step, 2);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('the process holding a step\'s state ending as the step arrives: the step fails at once, naming it', async () => {
    // Step 2's process ends at the next fork its interpreter makes; step 3 is sent with it, so it
    // arrives while the session is busy and is handed over as step 2 ends. Its process may also
    // fork its spare first (idle for 2 ms while step 2 is answered): then step 3 finds step 2 lost
    // and runs from step 1. Either way, nothing waits for a timeout. Tried until the first case.
    let arrived = 0;
    for (let attempt = 0; attempt < 8 && arrived === 0; attempt++) {
      const id = await createSession(conn.client);
      await step(conn.client, id, 'x = 41');
      const started = Date.now();
      const [arm, next] = await Promise.all([
        step(conn.client, id, 'import os\nos.register_at_fork(before=lambda: os._exit(3))\nx = "armed"'),
        step(conn.client, id, 'x', { timeout_seconds: 30 }),
      ]);
      const waited = Date.now() - started;
      assert.equal(arm.sc.session.kept, true, arm.text);
      assert.equal(arm.sc.session.step, 2, arm.text);
      assert.ok(waited < 10000, `answered after ${waited} ms (its timeout: 30 s)`);
      assert.match(next.text, /the state of step 2 was lost/);
      if (next.sc.session.kept === false) {
        arrived += 1;
        assert.equal(next.result.isError, true, next.text);
        assert.equal(next.sc.session.step, 1, next.text);
        assert.match(next.text, /the session's process holding step 2 ended before the step could start/);
        assert.match(next.text, /continues from step 1, its latest kept state/);
      } else {
        assert.equal(next.sc.return_value?.repr, '41', next.text);
        assert.equal(next.sc.session.step, 2, next.text);
      }
      const after = await step(conn.client, id, 'x + 1');
      assert.equal(after.sc.return_value?.repr, '42', after.text);
      await call(conn.client, 'close_session', { session_id: id });
    }
    assert.ok(arrived > 0, 'in 8 tries, step 3 never reached the process as it ended');
  });

  test('a step that kills the process of its previous state, or every other process of its session, is answered as such', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 1');
    // (It sleeps, so that the server sees the death while the step runs.)
    const parent = await step(conn.client, id, 'import os, time\nx = 2\nos.kill(os.getppid(), 9)\ntime.sleep(0.3)\nx');
    assert.equal(parent.sc.return_value?.repr, '2', parent.text);
    assert.equal(parent.sc.session.kept, true, parent.text);
    assert.equal(parent.sc.session.step, 2, parent.text);
    assert.match(parent.text, /the snapshot of step 1 was lost/);
    // Step 1's state is gone: no longer listed, and a rewind to it is refused; the session goes on.
    let listed = '';
    for (let i = 0; i < 50; i++) {
      listed = (await call(conn.client, 'list_sessions')).text;
      if (!/kept steps: 0, 1-2/.test(listed)) break;
      await sleep(100);
    }
    assert.match(listed, /kept steps: 0, 2\b/, listed);
    const rewind = await call(conn.client, 'reset_session', { session_id: id, step: 1 });
    assert.equal(rewind.result.isError, true, rewind.text);
    assert.match(rewind.text, /no longer kept/);
    assert.equal((await step(conn.client, id, 'x + 1')).sc.return_value?.repr, '3');
    await call(conn.client, 'close_session', { session_id: id });

    // kill(-1) spares only the sandbox's init and the step's own process: every other state goes,
    // step 0's included, and the step's process holds the session's only state from then on.
    const survivor = await createSession(conn.client);
    await step(conn.client, survivor, 'x = 1');
    const all = await step(conn.client, survivor, 'import os, time\nos.kill(-1, 9)\ntime.sleep(0.5)\nx += 1\nx');
    assert.equal(all.result.isError, false, all.text);
    assert.equal(all.sc.return_value?.repr, '2', all.text);
    assert.equal(all.sc.session.kept, true, all.text);
    assert.equal(all.sc.session.step, 2, all.text);
    assert.match(all.text, /the snapshot of step 0 was lost/);
    for (let i = 0; i < 50; i++) {
      listed = (await call(conn.client, 'list_sessions')).text;
      if (new RegExp(`${survivor}[^\n]*\n[^\n]*kept steps: 2\\b`).test(listed)) break;
      await sleep(100);
    }
    assert.match(listed, new RegExp(`${survivor}[^\n]*\n[^\n]*kept steps: 2\\b`), listed);
    const toZero = await call(conn.client, 'reset_session', { session_id: survivor, step: 0 });
    assert.equal(toZero.result.isError, true, toZero.text);
    assert.match(toZero.text, /step 0 is no longer kept/);
    const after = await step(conn.client, survivor, 'x + 1');
    assert.equal(after.sc.return_value?.repr, '3', after.text);
    assert.equal(after.sc.session.step, 3, after.text);
    await call(conn.client, 'close_session', { session_id: survivor });

    // The same step then dying itself leaves nothing: the session has ended, and says so.
    const doomed = await createSession(conn.client);
    await step(conn.client, doomed, 'x = 1');
    const gone = await step(conn.client, doomed, 'import os, time\nos.kill(-1, 9)\ntime.sleep(0.3)\nos._exit(3)');
    assert.equal(gone.result.isError, true, gone.text);
    assert.notEqual(gone.sc.end_reason, 'cancelled', gone.text);  // nobody cancelled it
    assert.equal(gone.sc.session.kept, false, gone.text);
    assert.match(gone.text, /the session ended|the session has ended/);
    const next = await step(conn.client, doomed, 'x');
    assert.equal(next.result.isError, true, next.text);
    assert.match(next.text, /has ended: (its sandbox ended|every state it held was lost).*\(create_session makes a new one\)/);
  });

  test('a fork whose every state a step of its origin killed has ended, and says why', async () => {
    // A fork shares its origin's sandbox: kill(-1) in the origin takes the fork's processes too.
    const origin = await createSession(conn.client);
    await step(conn.client, origin, 'x = 1');
    const f = await call(conn.client, 'fork_session', { session_id: origin, step: 1 });
    assert.equal(f.result.isError, false, f.text);
    const fork = f.sc.session_id;
    const all = await step(conn.client, origin, 'import os, time\nos.kill(-1, 9)\ntime.sleep(0.5)\nx + 1');
    assert.equal(all.sc.return_value?.repr, '2', all.text);
    assert.equal(all.sc.session.kept, true, all.text);
    let next;
    for (let i = 0; i < 50; i++) {
      next = await step(conn.client, fork, 'x');
      if (next.result.isError) break;
      await sleep(100);
    }
    assert.equal(next.result.isError, true, next.text);
    assert.match(next.text, /has ended: every state it held was lost/);
    assert.doesNotMatch((await call(conn.client, 'list_sessions')).text, new RegExp(fork));
    // The origin goes on from the state its step left.
    assert.equal(await valueOf(step(conn.client, origin, 'x + 2')), '3');
    await call(conn.client, 'close_session', { session_id: origin });
  });

  test('a step that kills the process of its previous state on its first line still ran, and is kept', async () => {
    // The step's process may run before its holder has done anything after the fork (or after
    // handing the step to a spare): the step started all the same, whenever the holder dies.
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 0');
    for (let i = 1; i <= 16; i++) {
      if (i % 2 === 0) await sleep(30);  // the odd steps back to back, the even ones after a spare is ready
      const r = await step(conn.client, id, `import os; os.kill(os.getppid(), 9)\nx = ${i}\nx`);
      assert.equal(r.result.isError, false, r.text);
      assert.equal(r.sc.return_value?.repr, String(i), r.text);
      assert.equal(r.sc.session.kept, true, r.text);
      assert.equal(r.sc.session.step, i + 1, r.text);
    }
    assert.equal(await valueOf(step(conn.client, id, 'x + 1')), '17');
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a step whose process ends after it killed the process of its previous state is answered at once', async () => {
    // Its parent (the state it started from) is gone, so no parent reports its end: the server
    // sees the process end by its pidfd, and does not wait for the step's timeout.
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 1');
    await step(conn.client, id, 'x = 2');
    const t0 = Date.now();
    const r = await step(conn.client, id, 'import os\nos.kill(os.getppid(), 9)\nos.kill(os.getpid(), 9)',
      { timeout_seconds: 60 });
    const seconds = (Date.now() - t0) / 1000;
    assert.ok(seconds < 10, `answered after ${seconds} s: ${r.text}`);
    assert.equal(r.sc.session.kept, false, r.text);
    assert.equal(r.sc.timed_out, false, r.text);
    assert.match(r.sc.session.note, /this step was not kept/, r.text);
    // Step 2's state went with its process: the session goes on from step 1.
    assert.equal(r.sc.session.step, 1, r.text);
    assert.equal(await valueOf(step(conn.client, id, 'x')), '1');
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a long session\'s process keeps its stack and memory from step to step', async () => {
    const id = await createSession(conn.client);
    const probe = "{l.split(':')[0]: int(l.split()[1]) for l in open('/proc/self/status') "
      + "if l.startswith(('VmStk:', 'RssAnon:'))}";
    await step(conn.client, id, 'x = 0');
    for (let i = 0; i < 20; i++) await step(conn.client, id, 'x += 1');
    const early = (await step(conn.client, id, probe)).sc.return_value.json;
    for (let i = 0; i < 400; i++) await step(conn.client, id, 'x += 1');
    const late = (await step(conn.client, id, probe)).sc.return_value.json;
    // Each step's process holds the next state and forks the next step's: a step must not leave
    // frames or memory behind, or a long session runs out of stack (its frames were 170 kB over
    // these 400 steps, and a session of about 12,700 steps crashed; a page may come from a deeper
    // call once).
    const over = (key) => `${key} ${early[key]} kB -> ${late[key]} kB over 400 steps`;
    assert.ok(late.VmStk - early.VmStk < 64, over('VmStk'));
    assert.ok(late.RssAnon - early.RssAnon < 128, over('RssAnon'));
    assert.equal((await step(conn.client, id, 'x')).sc.return_value.repr, '420');
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('files a step opens stay open in later steps, in the right place', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, "import os\nlog = open('log.txt', 'w')\nnull = os.open('/dev/null', os.O_RDONLY)");
    // A later step's own fds (its script, its files request, its result channel) never take
    // the numbers of the session's files.
    await step(conn.client, id, "log.write('one\\n')\nlog.flush()", { input_files: { 'in.txt': 'x' } });
    const other = await step(conn.client, id, "extra = open('other.txt', 'w')\nlog.write('two\\n')\nlog.flush()\nos.fstat(null).st_mode == os.stat('/dev/null').st_mode");
    assert.equal(other.sc.return_value?.repr, 'True', other.text);
    const read = await step(conn.client, id, "extra.close()\n(open('log.txt').read(), open('other.txt').read())");
    assert.equal(read.sc.return_value?.repr, "('one\\ntwo\\n', '')", read.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a state that holds every descriptor it may still takes its next steps', async () => {
    const id = await createSession(conn.client);
    const fill = await step(conn.client, id, `
import os
held = []
try:
    while True:
        held.append(os.open('/dev/null', os.O_RDONLY))
except OSError as e:
    error = e.strerror
error`);
    assert.equal(fill.sc.return_value?.repr, "'Too many open files'", fill.text);
    for (let i = 0; i < 2; i++) {  // a step forked from that state, then one from its spare
      const next = await step(conn.client, id, 'len(held) > 200');
      assert.equal(next.sc.return_value?.repr, 'True', next.text);
    }
    const freed = await step(conn.client, id, 'for fd in held[:10]:\n    os.close(fd)\ndel held[:10]\nlen(held) > 200');
    assert.equal(freed.sc.return_value?.repr, 'True', freed.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a cancelled step leaves the session at its previous state', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 1');
    const controller = new AbortController();
    const pending = conn.client.callTool(
      { name: 'execute_python', arguments: { session_id: id, script: 'import time\nx = 2\ntime.sleep(60)' } },
      undefined, { signal: controller.signal, timeout: 60000 });
    await sleep(500);
    controller.abort();
    await assert.rejects(pending);
    let r;
    for (let i = 0; i < 50; i++) {  // the cancelled step may still be ending
      r = await step(conn.client, id, 'x');
      if (r.sc.session) break;
      await sleep(100);
    }
    assert.equal(r.sc.return_value?.repr, '1', r.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('a thread pool turns snapshots off, and results say so', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 1');
    const pool = await step(conn.client, id,
      'import concurrent.futures as cf\npool = cf.ThreadPoolExecutor(2)\npool.submit(lambda: 7).result()');
    assert.equal(pool.sc.return_value?.repr, '7', pool.text);
    assert.equal(pool.sc.session.snapshots, false, pool.text);
    assert.match(pool.sc.session.note, /thread/);
    const next = await step(conn.client, id, 'x + pool.submit(lambda: 1).result()');
    assert.equal(next.sc.return_value?.repr, '2', next.text);
    assert.equal(next.sc.session.snapshots, false, next.text);
    const fork = await call(conn.client, 'fork_session', { session_id: id });
    assert.equal(fork.result.isError, true, fork.text);
    // Earlier snapshots (before the threads) are still there.
    const reset = await call(conn.client, 'reset_session', { session_id: id, step: 1 });
    assert.equal(reset.result.isError, false, reset.text);
    const back = await step(conn.client, id, "x, 'pool' in globals()");
    assert.equal(back.sc.return_value?.repr, '(1, False)', back.text);
    assert.equal(back.sc.session.snapshots, true, back.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('list_sessions and check_environment show the sessions; unknown and malformed ids are refused', async () => {
    const id = await createSession(conn.client);
    await step(conn.client, id, 'x = 1');
    const list = await call(conn.client, 'list_sessions');
    const mine = list.sc.sessions.find((s) => s.session_id === id);
    assert.ok(mine, list.text);
    assert.equal(mine.step, 1);
    // Measured where the session has a cgroup; else the list says it is not.
    assert.ok(mine.memory_bytes > 0 || /memory is not measured/.test(list.text), list.text);
    assert.ok(mine.age_seconds >= 0, list.text);
    const env = await call(conn.client, 'check_environment');
    assert.ok(JSON.stringify(env.sc.sessions).includes(id), env.text);
    await call(conn.client, 'close_session', { session_id: id });
    const gone = await step(conn.client, id, 'x');
    assert.equal(gone.result.isError, true, gone.text);
    assert.match(gone.text, /unknown session/);
    const malformed = await step(conn.client, '../../etc', 'x');
    assert.equal(malformed.result.isError, true, malformed.text);
    assert.equal((await call(conn.client, 'close_session', { session_id: id })).result.isError, true);
  });

  test('input_files in, output_files out as embedded resources, within --max-output-file-bytes', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]);
    const r = await call(conn.client, 'execute_python', {
      script: `
import os
data = open('data/in.csv').read()
raw = open('img.png', 'rb').read()
os.makedirs('out/deep', exist_ok=True)
open('out/upper.csv', 'w').write(data.upper())
open('out/deep/copy.png', 'wb').write(raw)
print(len(raw))
`,
      input_files: { 'data/in.csv': 'a,b\n1,2\n', 'img.png': { base64: png.toString('base64') } },
      output_files: ['out/**'],
    });
    assert.equal(r.sc.exit_code, 0, r.text);
    assert.equal(r.sc.stdout.trim(), String(png.length));
    const resources = r.result.content.filter((c) => c.type === 'resource').map((c) => c.resource);
    const csv = resources.find((x) => x.uri.endsWith('out/upper.csv'));
    assert.equal(csv.text, 'A,B\n1,2\n');
    assert.equal(csv.mimeType, 'text/csv');
    const img = resources.find((x) => x.uri.endsWith('out/deep/copy.png'));
    assert.equal(img.mimeType, 'image/png');
    assert.deepEqual(Buffer.from(img.blob, 'base64'), png);
    assert.equal(r.sc.files.length, 2, r.text);

    const big = await call(conn.client, 'execute_python', {
      script: "open('a.txt','w').write('x' * 8000)\nopen('b.txt','w').write('y' * 8000)",
      output_files: ['*.txt'],
    });
    assert.equal(big.sc.files.length, 2);
    const limited = await connect(['--max-output-file-bytes', '10000']);
    try {
      const cut = await call(limited.client, 'execute_python', {
        script: "open('a.txt','w').write('x' * 8000)\nopen('b.txt','w').write('y' * 8000)",
        output_files: ['*.txt'],
      });
      assert.equal(cut.sc.files.length, 1, cut.text);
      assert.match(cut.text, /max-output-file-bytes/);
    } finally {
      await limited.client.close();
    }
  });

  test('hostile paths are refused, and symlinks a script plants are never followed', async () => {
    for (const bad of ['../escape.txt', '/etc/passwd', 'a/../../b', 'a\u0000b', '']) {
      const r = await call(conn.client, 'execute_python', { script: 'pass', input_files: { [bad]: 'x' } });
      assert.equal(r.result.isError, true, `${JSON.stringify(bad)}: ${r.text}`);
      const o = await call(conn.client, 'execute_python', { script: 'pass', output_files: [bad] });
      assert.equal(o.result.isError, true, `${JSON.stringify(bad)}: ${o.text}`);
    }
    const badBase64 = await call(conn.client, 'execute_python', { script: 'pass', input_files: { 'a': { base64: '!!' } } });
    assert.equal(badBase64.result.isError, true, badBase64.text);

    // A link to a host file and a link to a host directory, planted by the script.
    const r = await call(conn.client, 'execute_python', {
      script: "import os\nos.symlink('/etc/passwd', 'passwd.txt')\nos.symlink('/etc', 'etc')\nopen('ok.txt','w').write('ok')",
      output_files: ['*.txt', 'etc/*', 'etc/passwd'],
    });
    assert.equal(r.sc.exit_code, 0, r.text);
    const uris = r.result.content.filter((c) => c.type === 'resource').map((c) => c.resource.uri);
    assert.deepEqual(uris, ['sandbox://workdir/ok.txt'], r.text);
    assert.match(r.text, /symlink/);
    assert.ok(!r.text.includes('root:x:0:0'), r.text);

    // In a session the work dir persists: a link planted in one step must not carry the next
    // step's input_files out of it.
    const id = await createSession(conn.client);
    await step(conn.client, id, "import os\nos.symlink('/tmp', 'd')\nos.symlink('/tmp/planted-target', 'f')");
    const write = await step(conn.client, id, "import os\nsorted(os.listdir('.'))", { input_files: { 'd/x.txt': 'x' } });
    const write2 = await step(conn.client, id, 'pass', { input_files: { f: 'y' } });
    for (const w of [write, write2]) {
      assert.ok(w.result.isError || w.sc.exit_code !== 0 || /symlink|refused/.test(w.text), w.text);
      assert.ok(/symlink|refused/.test(w.text), w.text);
    }
    const inside = await step(conn.client, id, "import os\n[os.path.islink('d'), os.path.exists('/tmp/x.txt'), os.path.exists('/tmp/planted-target')]");
    assert.equal(inside.sc.return_value?.repr, '[True, False, False]', inside.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('an input file replaces what an earlier step left at its path, never writing through it', async () => {
    const id = await createSession(conn.client);
    const setup = await step(conn.client, id, `
import os
open('target.txt', 'w').write('target')
os.link('target.txt', 'linked.txt')
os.mkfifo('fifo')
open('readonly.txt', 'w').write('old')
os.chmod('readonly.txt', 0o444)
os.symlink('target.txt', 'link')
open('keep.txt', 'w').write('kept')
`);
    assert.equal(setup.sc.exit_code, 0, setup.text);
    // A hard link's other name keeps its content; a FIFO and a read-only file are replaced.
    const replaced = await step(conn.client, id, `
import os, stat
[open('target.txt').read(), open('linked.txt').read(), os.stat('target.txt').st_nlink,
 stat.S_ISREG(os.lstat('fifo').st_mode), open('fifo').read(), open('readonly.txt').read(),
 sorted(n for n in os.listdir('.') if n.startswith('.mpes-input'))]
`, { input_files: { 'linked.txt': 'new', fifo: 'not a pipe', 'readonly.txt': 'replaced' } });
    assert.equal(replaced.sc.return_value?.repr,
      "['target', 'new', 1, True, 'not a pipe', 'replaced', []]", replaced.text);
    // A symlink is refused, its target untouched.
    const link = await step(conn.client, id, 'pass', { input_files: { link: 'through' } });
    assert.match(link.text, /'link' is a symlink in the work dir: refused/);
    // A write that fails (over the file size limit the session set itself) leaves the old content.
    const limit = await step(conn.client, id, 'import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (4, 4))');
    assert.equal(limit.sc.exit_code, 0, limit.text);
    const failed = await step(conn.client, id, 'pass', { input_files: { 'keep.txt': 'longer than four bytes' } });
    assert.match(failed.text, /input file 'keep\.txt': File too large/, failed.text);
    const after = await step(conn.client, id, `
import os
[open('keep.txt').read(), open('target.txt').read(), sorted(n for n in os.listdir('.') if n.startswith('.mpes-input'))]
`);
    assert.equal(after.sc.return_value?.repr, "['kept', 'target', []]", after.text);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('an output file name cannot forge lines of the text: names are shown escaped', async () => {
    const r = await call(conn.client, 'execute_python', {
      script: `
import os
open('a\\n--- stdout ---\\nfake', 'w').write('x')
os.symlink('/etc/passwd', 'b\\n--- exit_code: 0 ---\\\\')
`,
      output_files: ['a*', 'b*'],
    });
    assert.equal(r.sc.exit_code, 0, r.text);
    const lines = r.text.split('\n');
    assert.ok(!lines.includes('fake'), r.text);
    assert.equal(lines.filter((l) => l.startsWith('--- exit_code:')).length, 1, r.text);
    assert.ok(lines.includes('a\\n--- stdout ---\\nfake (application/octet-stream, 1 bytes)'), r.text);
    assert.ok(lines.some((l) => l.startsWith('output_files: refused b\\n--- exit_code: 0 ---\\\\ (a symlink')), r.text);
    // The structured result keeps the name whole; the resource's URI percent-encodes it.
    assert.deepEqual(r.sc.files.map((f) => f.path), ['a\n--- stdout ---\nfake'], r.text);
    const uris = r.result.content.filter((c) => c.type === 'resource').map((c) => c.resource.uri);
    assert.deepEqual(uris, ['sandbox://workdir/a%0A---%20stdout%20---%0Afake'], r.text);
  });

  test('an output file that cannot come back is left out with a note, the rest of the result kept', async () => {
    // Deeper than a path may be (32 names), unreadable, directories matched by a wildcard.
    const r = await call(conn.client, 'execute_python', {
      script: `
import os
p = '/'.join(['d'] * 33)
os.makedirs(p)
open(p + '/deep.txt', 'w').write('deep')
open('shallow.txt', 'w').write('shallow')
os.makedirs('sub')
open('locked.txt', 'w').write('x')
os.chmod('locked.txt', 0)
'value'
`,
      output_files: ['**/*.txt', '*'],
    });
    assert.equal(r.sc.exit_code, 0, r.text);
    assert.equal(r.sc.return_value?.repr, "'value'", r.text);
    const paths = r.sc.files.map((f) => f.path);
    assert.ok(paths.includes('shallow.txt'), r.text);
    assert.ok(!paths.some((p) => p.endsWith('deep.txt')), r.text);
    assert.match(r.text, /more than 32 levels deep were not searched/);
    assert.ok(!/sub \(/.test(r.text), r.text);  // a directory a wildcard matched is passed over
    if (!paths.includes('locked.txt')) assert.match(r.text, /locked\.txt \(Permission denied\)/);

    // Out of descriptors when the outputs are matched: a note, never the runner's traceback.
    const scarce = await call(conn.client, 'execute_python', {
      script: `
import os, resource
os.makedirs('a/b')
open('a/b/x.txt', 'w').write('x')
n = len(os.listdir('/proc/self/fd')) - 1
resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
'kept'
`,
      output_files: ['**/x.txt'],
    });
    assert.equal(scarce.sc.exit_code, 0, scarce.text);
    assert.equal(scarce.sc.return_value?.repr, "'kept'", scarce.text);
    assert.match(scarce.text, /output_files: .*Too many open files/);
    assert.ok(!/_mpes_|Traceback/.test(scarce.sc.stderr ?? ''), scarce.text);
  });

  test('a session step is as confined as a run: identity, capabilities, seccomp, namespaces, mounts', async () => {
    const probe = `
import os, json
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
facts = {k: status[k].strip() for k in ('Uid', 'Gid', 'CapEff', 'CapBnd', 'NoNewPrivs', 'Seccomp')}
facts['ns'] = sorted(os.listdir('/proc/self/ns'))
facts['root'] = sorted(os.listdir('/'))
facts['etc_shadow'] = os.path.exists('/etc/shadow')
facts['cwd'] = os.getcwd()
facts['pid1'] = open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].decode(errors='replace')
try:
    os.setuid(0)
    facts['setuid0'] = True
except OSError:
    facts['setuid0'] = False
print(json.dumps(facts, sort_keys=True))
`;
    const run = await call(conn.client, 'execute_python', { script: probe });
    const id = await createSession(conn.client);
    const inSession = await step(conn.client, id, probe);
    assert.equal(run.sc.exit_code, 0, run.text);
    assert.equal(inSession.sc.exit_code, 0, inSession.text);
    const a = JSON.parse(run.sc.stdout);
    const b = JSON.parse(inSession.sc.stdout);
    assert.equal(b.setuid0, false);
    assert.equal(b.CapEff, '0000000000000000');
    assert.equal(b.NoNewPrivs, '1');
    assert.equal(b.Seccomp, '2');
    assert.deepEqual(b, a, `session: ${inSession.sc.stdout}\nrun: ${run.sc.stdout}`);
    await call(conn.client, 'close_session', { session_id: id });
  });

  test('two sessions see neither each other\'s files nor each other\'s processes', async () => {
    const a = await createSession(conn.client);
    const b = await createSession(conn.client);
    await step(conn.client, a, "import os\nopen('secret.txt','w').write('a')\nsecret = 'a-memory'\nmine = os.getpid()");
    const seen = await step(conn.client, b,
      "import os\n[os.path.exists('secret.txt'), 'secret' in globals(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit())]");
    assert.equal(seen.sc.exit_code, 0, seen.text);
    const [fileSeen, memorySeen, pids] = seen.sc.return_value.json;
    assert.equal(fileSeen, false, seen.text);
    assert.equal(memorySeen, false, seen.text);
    // b's pid namespace: only its own few processes (its init and the processes holding its steps).
    assert.ok(pids.length <= 6, seen.text);
    const aFiles = await step(conn.client, a, "open('secret.txt').read()");
    assert.equal(aFiles.sc.return_value?.repr, "'a'");
    // And a stateless run sees nothing of either.
    const run = await call(conn.client, 'execute_python', { script: "import os\nos.path.exists('secret.txt')" });
    assert.equal(run.sc.return_value?.repr, 'False');
    await call(conn.client, 'close_session', { session_id: a });
    await call(conn.client, 'close_session', { session_id: b });
  });
});

describe('session limits', () => {
  test('--max-sessions refuses one more with an error naming the flag; closing frees room', async () => {
    const conn = await connect(['--max-sessions', '2']);
    try {
      const a = await createSession(conn.client);
      const b = await createSession(conn.client);
      const third = await call(conn.client, 'create_session');
      assert.equal(third.result.isError, true, third.text);
      assert.match(third.text, /--max-sessions 2/);
      const fork = await call(conn.client, 'fork_session', { session_id: a });
      assert.equal(fork.result.isError, true, fork.text);
      assert.match(fork.text, /--max-sessions/);
      await call(conn.client, 'close_session', { session_id: b });
      await createSession(conn.client);
    } finally {
      await conn.client.close();
    }
  });

  test('a session idle past --session-idle-seconds is closed; a busy one is not', async () => {
    const conn = await connect(['--session-idle-seconds', '2']);
    try {
      const idle = await createSession(conn.client);
      const busy = await createSession(conn.client);
      await step(conn.client, idle, 'x = 1');
      // A step longer than the idle time: the session is in use, never idle meanwhile.
      const long = await step(conn.client, busy, 'import time\ntime.sleep(3)\ny = 2\ny');
      assert.equal(long.sc.return_value?.repr, '2', long.text);
      const expired = await step(conn.client, idle, 'x');
      assert.equal(expired.result.isError, true, expired.text);
      assert.match(expired.text, /idle|unknown session/);
      const alive = await step(conn.client, busy, 'y');
      assert.equal(alive.sc.return_value?.repr, '2', alive.text);
      const list = await call(conn.client, 'list_sessions');
      assert.ok(!JSON.stringify(list.sc).includes(idle), list.text);
    } finally {
      await conn.client.close();
    }
  });

  test('a cancelled create_session makes no session and frees its place under --max-sessions', async () => {
    // Raw JSON-RPC: whether the server answered a creation before its cancel came is seen on
    // the wire (an SDK client forgets the call at once, whatever the server did).
    const raw = new RawServer(['--max-sessions', '2']);
    try {
      await raw.initialize();
      const request = (id, name, args = {}) =>
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
      await raw.send(request('a', 'create_session'));
      const a = (await raw.byId('a', 30000)).result.structuredContent.session_id;
      for (let i = 0; i < 6; i++) {  // each request with its cancel right behind it, in one write
        await raw.send(`${request(`c${i}`, 'create_session')}\n` +
          JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: `c${i}` } }));
      }
      await sleep(1500);  // what the cancelled creations started has ended by now
      const made = [];
      let cancelled = 0;
      for (let i = 0; i < 6; i++) {
        const answer = raw.messages.find((m) => m.id === `c${i}`);
        if (!answer) cancelled += 1;
        else if (answer.result?.structuredContent?.session_id) made.push(answer.result.structuredContent.session_id);
      }
      assert.ok(cancelled > 0, JSON.stringify(raw.messages));
      await raw.send(request('list', 'list_sessions'));
      const listed = (await raw.byId('list')).result.structuredContent.sessions.map((x) => x.session_id);
      assert.deepEqual(listed.sort(), [a, ...made].sort());  // no session without its answer
      for (const id of made) {
        await raw.send(request(`close-${id}`, 'close_session', { session_id: id }));
        await raw.byId(`close-${id}`);
      }
      await raw.send(request('b', 'create_session'));  // the second place is free
      const b = await raw.byId('b', 30000);
      assert.match(b.result.structuredContent?.session_id ?? '', /^[0-9a-f]{32}$/, JSON.stringify(b));
    } finally {
      await raw.close();
    }
  });

  test('a step waiting for a run slot keeps its session from expiring meanwhile', async () => {
    const conn = await connect(['--session-idle-seconds', '2', '--max-concurrent-runs', '1']);
    try {
      const id = await createSession(conn.client);
      await step(conn.client, id, 'x = 1');
      await sleep(1200);
      // The one run slot is taken past the session's idle deadline; its step waits for it.
      const blocker = call(conn.client, 'execute_python', { script: 'import time\ntime.sleep(3.5)' });
      await sleep(200);
      const waiting = step(conn.client, id, 'x');
      assert.equal((await blocker).sc.exit_code, 0);
      const r = await waiting;
      assert.equal(r.result.isError, false, r.text);
      assert.equal(r.sc.return_value?.repr, '1', r.text);
    } finally {
      await conn.client.close();
    }
  });

  test('a step\'s process is the only one its state forks for it, whenever the step comes', async () => {
    // The process holding the state forks the next step's process ahead (a spare) only when the
    // server asks: a step arriving as such a fork is under way waits for it, and never makes the
    // holder fork a second process beside it. A step counts its siblings (the other children of
    // the process holding the state it continues); the steps come back to back and after gaps
    // around the time a fork takes.
    const conn = await connect([]);
    try {
      const id = await createSession(conn.client);
      const siblings = `import os
me, parent = os.getpid(), os.getppid()
n = 0
for q in os.listdir('/proc'):
    if q.isdigit() and int(q) != me:
        try:
            f = open(f'/proc/{q}/stat').read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        n += f[0] != 'Z' and int(f[1]) == parent
n`;
      const seen = [];
      for (let i = 0; i < 60; i++) {
        await step(conn.client, id, `x = ${i}`);
        const until = performance.now() + (i % 30) * 0.1;  // 0 to 2.9 ms, spun: timers are coarser
        while (performance.now() < until);
        const r = await step(conn.client, id, siblings);
        seen.push(r.sc.return_value?.repr);
      }
      assert.deepEqual(seen.filter((v) => v !== '0'), [], `siblings per step: ${seen.join(' ')}`);
    } finally {
      await conn.client.close();
    }
  });

  test('--session-snapshots 2: older steps are refused and their processes go', async () => {
    const conn = await connect(['--session-snapshots', '2']);
    try {
      const id = await createSession(conn.client);
      for (let i = 1; i <= 10; i++) await step(conn.client, id, `x = ${i}`);
      const old = await call(conn.client, 'reset_session', { session_id: id, step: 3 });
      assert.equal(old.result.isError, true, old.text);
      assert.match(old.text, /no longer kept/);
      // The session's pid namespace holds its init, the fresh state (step 0), the two kept
      // snapshots and this step; a snapshot let go of is killed just after its step's answer.
      // (The step answers the count, its pid and every process: pid, parent, state.)
      const count = await step(conn.client, id, `import os, time
def alive():
    out = []
    for p in os.listdir('/proc'):
        try:
            f = open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split() if p.isdigit() else None
        except OSError:
            continue
        if f and f[0] != 'Z':
            out.append((int(p), int(f[1]), f[0]))
    return out
end = time.monotonic() + 5
while len(alive()) > 5 and time.monotonic() < end:
    time.sleep(0.05)
seen = alive()
(len(seen), os.getpid(), sorted(seen))`);
      assert.match(count.sc.return_value?.repr ?? '', /^\(5,/, count.text);
      assert.equal((await step(conn.client, id, 'x')).sc.return_value?.repr, '10');
    } finally {
      await conn.client.close();
    }
  });

  test('sessions end with the server: nothing of them is left running', async () => {
    const conn = await connect([]);
    const id = await createSession(conn.client);
    const marker = `mpes-session-${Date.now()}`;
    await step(conn.client, id, `import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '${marker}'])`);
    await conn.client.close();
    const { execFileSync } = await import('node:child_process');
    let left = '';
    for (let i = 0; i < 60; i++) {
      try {
        left = execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim();
      } catch (e) {
        left = '';
      }
      if (!left) break;
      await sleep(100);
    }
    assert.equal(left, '', 'a process of the session survived the server');
  });
});

describe('sessions over Streamable HTTP', () => {
  let server;
  before(async () => {
    server = await startHttpServer([]);
  });
  after(async () => {
    await server?.stop();
  });

  async function httpClient() {
    return (await httpConnection()).client;
  }
  async function httpConnection() {
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    const client = new Client({ name: 'mpes-e2e-sessions', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  }
  const totalSessions = async (client) => (await call(client, 'list_sessions')).sc.total_sessions;

  test('a session of one client is invisible to another', async () => {
    const alice = await httpClient();
    const bob = await httpClient();
    try {
      const id = await createSession(alice);
      const set = await step(alice, id, "secret = 'alice-only-value'");
      assert.equal(set.sc.exit_code, 0, set.text);
      for (const [name, args] of [
        ['execute_python', { session_id: id, script: 'secret' }],
        ['fork_session', { session_id: id }],
        ['reset_session', { session_id: id, step: 0 }],
        ['close_session', { session_id: id }],
      ]) {
        const r = await call(bob, name, args);
        assert.equal(r.result.isError, true, `${name}: ${r.text}`);
        assert.match(r.text, /unknown session/, `${name}: ${r.text}`);
        assert.ok(!r.text.includes('alice-only-value'), r.text);
      }
      const listed = await call(bob, 'list_sessions');
      assert.ok(!JSON.stringify(listed.sc).includes(id), listed.text);
      assert.ok(!listed.text.includes(id), listed.text);
      // Alice still has it, untouched.
      const still = await step(alice, id, 'secret');
      assert.equal(still.sc.return_value?.repr, "'alice-only-value'", still.text);
      assert.ok(JSON.stringify((await call(alice, 'list_sessions')).sc).includes(id));
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  test('a client\'s sessions close when its HTTP session ends (DELETE), not at --session-idle-seconds', async () => {
    const observer = await httpClient();
    const alice = await httpConnection();
    try {
      const before = await totalSessions(observer);
      const id = await createSession(alice.client);
      await step(alice.client, id, 'x = 1');
      const forked = await call(alice.client, 'fork_session', { session_id: id });
      assert.equal(forked.result.isError, false, forked.text);
      assert.equal(await totalSessions(observer), before + 2);
      await alice.transport.terminateSession();
      assert.equal(await totalSessions(observer), before, 'the ended client\'s sessions are still open');
      // Its HTTP session is gone: a request under it is refused, and the sessions are not reachable.
      await assert.rejects(call(alice.client, 'list_sessions'));
      assert.match(server.stderr(), new RegExp(`session ${id} closed: its HTTP session was ended by the client`));
    } finally {
      await alice.client.close();
      await observer.close();
    }
  });
});
