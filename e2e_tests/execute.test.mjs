// execute_python end to end through the MCP SDK client: output, exit codes, tracebacks, UTF-8,
// deadlines, cancellation, output bounds, concurrency and isolation between runs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { backend, connect, textOf, serverPath } from './lib/client.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Processes on the host whose command line contains `marker` (none of ours: pgrep excludes itself).
function processesWith(marker) {
  try {
    return execFileSync('pgrep', ['-f', '-a', marker], { encoding: 'utf8' }).trim();
  } catch (e) {
    if (e.status === 1) return '';  // none matched
    throw e;
  }
}

// Waits until no host process carries `marker` (the kernel may take a moment to reap them).
async function assertNoSurvivors(marker) {
  let left = '';
  for (let i = 0; i < 40; i++) {
    left = processesWith(marker);
    if (!left) return;
    await sleep(50);
  }
  assert.fail(`processes survived the run: ${left}`);
}

// A script that leaves a process tree behind: a child, a setsid daemon (double fork), each
// carrying `marker` in its command line, then prints `partial` and sleeps.
function treeScript(marker) {
  return `
import os, subprocess, sys, time
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '${marker}-child'])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', '${marker}-daemon'])
    os._exit(0)
os.wait()
print('partial', flush=True)
time.sleep(600)
`;
}

async function run(client, script, extra = {}, options = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script, ...extra } },
    undefined,
    { timeout: 120000, ...options },
  );
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

describe('execute_python (native sandbox)', () => {
  let conn;
  before(async () => {
    conn = await connect([]);
  });
  after(async () => {
    await conn?.client.close();
  });

  test('print goes to stdout; the text has the exact sections', async () => {
    const { result, text, sc } = await run(conn.client, "print('hello')");
    assert.equal(result.isError ?? false, false, text);
    // (A usage line may follow: it belongs to the rich-results work.)
    assert.match(text,
      /^--- stdout ---\nhello\n\n(--- notes ---\nthe memory limit [^\n]*\n)?--- exit_code: 0 ---\n--- duration_ms: \d+ ---(\n--- usage: [^\n]* ---)?$/);
    assert.equal(sc.stdout, 'hello\n');
    assert.equal(sc.stderr, '');
    assert.equal(sc.exit_code, 0);
    assert.equal(sc.timed_out, false);
    assert.equal(sc.sandbox, backend);
    assert.equal(sc.execution_path, 'zygote');
    assert.match(sc.python_version, /^3\.\d+\.\d+/);
  });

  test('where no cgroup limits memory, the result and the tool description say the limit is per process', async () => {
    const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const cgroups = env.structuredContent?.engine?.cgroups;
    assert.ok(cgroups, JSON.stringify(env.structuredContent));
    const perProcess = cgroups.memory === 'RLIMIT_DATA';
    const { text, sc } = await run(conn.client, "print('hi')");
    const note = (sc.notes ?? []).find((n) => /memory limit \(\d+ MiB\) is per process/.test(n));
    assert.equal(Boolean(note), perProcess, `cgroups: ${JSON.stringify(cgroups)}; ${text}`);
    if (perProcess) {
      assert.match(text, /--- notes ---\nthe memory limit \(\d+ MiB\) is per process and counts only its private memory: .*shared memory \(mmap\.mmap\(-1, n\), memfd, SysV segments\)/);
    }
    const { tools } = await conn.client.listTools();
    const description = tools.find((t) => t.name === 'execute_python').description;
    assert.match(description, /memory \d+ MiB for the whole run where the host gives the server a writable cgroup, else per process/);
  });

  test('exit codes: sys.exit(n), SystemExit with a message, exceptions', async () => {
    let r = await run(conn.client, 'import sys\nsys.exit(3)');
    assert.equal(r.sc.exit_code, 3);
    assert.match(r.text, /--- exit_code: 3 ---/);
    r = await run(conn.client, "raise SystemExit('bye')");
    assert.equal(r.sc.exit_code, 1);
    assert.equal(r.sc.stderr, 'bye\n');
    r = await run(conn.client, 'import sys\nsys.exit(0)');
    assert.equal(r.sc.exit_code, 0);
    r = await run(conn.client, 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)');
    assert.equal(r.sc.exit_code, -9, r.text);
    assert.equal(r.sc.timed_out, false);
  });

  test('stdout and stderr stay separate', async () => {
    const { text, sc } = await run(conn.client,
      "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\nprint('out again')");
    assert.equal(sc.stdout, 'to out\nout again\n');
    assert.equal(sc.stderr, 'to err\n');
    assert.ok(text.indexOf('--- stdout ---') < text.indexOf('--- stderr ---'));
  });

  test("tracebacks name script.py with the user's line numbers and no frames of ours", async () => {
    const { result, sc } = await run(conn.client, 'x = 1\n\ndef f():\n    return 1 / 0\n\nf()\n');
    assert.equal(result.isError ?? false, false, 'a failing script is a normal result');
    assert.equal(sc.exit_code, 1);
    assert.match(sc.stderr, /^Traceback \(most recent call last\):\n/);
    assert.match(sc.stderr, /File "script\.py", line 6, in <module>\n\s+f\(\)/);
    assert.match(sc.stderr, /File "script\.py", line 4, in f\n\s+return 1 \/ 0/);
    assert.match(sc.stderr, /ZeroDivisionError: division by zero\n$/);
    assert.doesNotMatch(sc.stderr, /<string>|_mpes|runner/);
    const syntax = await run(conn.client, 'print(1)\nprint(\n');
    assert.equal(syntax.sc.exit_code, 1);
    assert.match(syntax.sc.stderr, /File "script\.py", line 2/);
    assert.match(syntax.sc.stderr, /SyntaxError/);
  });

  test('atexit handlers run, and their errors read as a plain python3 run prints them', async () => {
    const { sc } = await run(conn.client, [
      'import atexit, sys',
      'def broken():',
      '    return 1 / 0',
      'atexit.register(print, "last words")',
      'atexit.register(broken)',
      'atexit.register(sys.exit, 3)',
      'print("body")',
    ].join('\n'));
    assert.equal(sc.stdout, 'body\nlast words\n');
    assert.equal(sc.exit_code, 0);  // CPython ignores SystemExit raised by an atexit callback
    // Callbacks run last registered first; each failure is one report, tracebacks only of the
    // script's own frames (sys.exit, a builtin, has none).
    // (3.11+ underlines the failing expression: a line left out of the comparison.)
    assert.equal(sc.stderr.replace(/^ *~*\^+~*\n/m, ''), [
      'Exception ignored in atexit callback: <built-in function exit>',
      'SystemExit: 3',
      `Exception ignored in atexit callback: ${sc.stderr.match(/<function broken at 0x[0-9a-f]+>/)?.[0]}`,
      'Traceback (most recent call last):',
      '  File "script.py", line 3, in broken',
      '    return 1 / 0',
      'ZeroDivisionError: division by zero',
      '',
    ].join('\n'));
  });

  test('the script runs as __main__ from script.py in a fresh work dir with a minimal environment', async () => {
    const { sc } = await run(conn.client, `
import json, os, subprocess, sys
print(json.dumps({
  'name': __name__, 'argv': sys.argv, 'cwd': os.getcwd(), 'listing': os.listdir('.'), 'file': __file__,
  'source': open(__file__).read().count('subprocess'),
  'env': dict(os.environ), 'stdin': sys.stdin.read(), 'uid': os.getuid(),
  'main_keys': sorted(k for k in globals() if not k.startswith('__')),
  'child_env': sorted(line.split('=')[0] for line in
                      subprocess.run(['env'], capture_output=True, text=True).stdout.splitlines()),
}))
`);
    const info = JSON.parse(sc.stdout);
    assert.equal(info.name, '__main__');
    assert.deepEqual(info.argv, ['script.py']);
    // As for `python3 script.py`: the script is a file in its work dir, and nothing else is.
    assert.deepEqual(info.listing, ['script.py']);
    assert.equal(info.file, `${info.cwd}/script.py`);
    assert.equal(info.source, 3);
    assert.equal(info.stdin, '');
    assert.notEqual(info.uid, 0);
    assert.deepEqual(info.main_keys, ['json', 'os', 'subprocess', 'sys']);
    const runEnv = ['HOME', 'LANG', 'MPLBACKEND', 'PATH', 'PYTHONIOENCODING', 'TMPDIR'];
    assert.deepEqual(Object.keys(info.env).sort(), runEnv);
    // Nothing of the zygote's own environment (LD_BIND_NOW, thread counts) reaches a subprocess.
    assert.deepEqual(info.child_env, runEnv);
    assert.equal(info.env.HOME, info.cwd);
    assert.equal(info.env.TMPDIR, info.cwd);
    assert.equal(info.env.LANG, 'C.UTF-8');
    assert.equal(info.env.PYTHONIOENCODING, 'utf-8');
    assert.equal(info.env.MPLBACKEND, 'Agg');
  });

  test('UTF-8 survives the round trip', async () => {
    const { sc, text } = await run(conn.client, "print('Hello 世界 🌍')");
    assert.equal(sc.stdout, 'Hello 世界 🌍\n');
    assert.match(text, /Hello 世界 🌍/);
  });

  test('timeout: partial output kept, exit -9, the whole process tree is gone', async () => {
    const marker = `mpes-e2e-timeout-${randomUUID()}`;
    const started = Date.now();
    const { result, text, sc } = await run(conn.client, treeScript(marker), { timeout_seconds: 2 });
    const elapsed = Date.now() - started;
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.timed_out, true);
    assert.equal(sc.exit_code, -9);
    assert.equal(sc.stdout, 'partial\n');
    assert.match(text, /--- exit_code: -9 ---/);
    assert.match(text, /--- timed_out: true ---/);
    assert.ok(elapsed >= 2000, `answered after ${elapsed} ms, before the deadline`);
    await assertNoSurvivors(marker);
  });

  test('timeout_seconds is clamped, not rejected', async () => {
    const { result, sc } = await run(conn.client, "print('ok')", { timeout_seconds: 0 });
    assert.equal(result.isError ?? false, false);
    assert.equal(sc.stdout, 'ok\n');
  });

  test('cancellation kills the run and its tree; the server keeps serving', async () => {
    const marker = `mpes-e2e-cancel-${randomUUID()}`;
    const controller = new AbortController();
    const pending = run(conn.client, treeScript(marker), { timeout_seconds: 60 },
      { signal: controller.signal });
    // Wait until the tree exists, then cancel.
    for (let i = 0; i < 200 && !processesWith(`${marker}-daemon`); i++) await sleep(25);
    assert.ok(processesWith(`${marker}-daemon`), 'the run started its processes');
    controller.abort();
    await assert.rejects(pending);
    await assertNoSurvivors(marker);
    const { sc } = await run(conn.client, "print('still here')");
    assert.equal(sc.stdout, 'still here\n');
  });

  test('an output flood is bounded: head, tail and a marker within the limit', async () => {
    const { sc } = await run(conn.client, `
import sys
sys.stdout.write('BEGIN\\n')
for i in range(200000):
    sys.stdout.write('line %d of a flood\\n' % i)
sys.stdout.write('END\\n')
print('err tail', file=sys.stderr)
`);
    assert.equal(sc.exit_code, 0);
    const limit = 102400;
    assert.ok(Buffer.byteLength(sc.stdout) <= limit, `stdout of ${Buffer.byteLength(sc.stdout)} bytes`);
    assert.ok(sc.stdout.startsWith('BEGIN\n'));
    assert.ok(sc.stdout.endsWith('line 199999 of a flood\nEND\n'));
    const m = sc.stdout.match(/\[\.\.\. (\d+) bytes dropped \.\.\.\]/);
    assert.ok(m, 'the marker says how much was dropped');
    assert.equal(Number(m[1]), sc.stdout_truncated);
    assert.ok(sc.stdout_truncated > 3_000_000);
    assert.equal(sc.stderr, 'err tail\n');
    assert.equal(sc.stderr_truncated, 0);
  });

  test('16 concurrent runs all complete with their own output', async () => {
    const calls = Array.from({ length: 16 }, (_, i) =>
      run(conn.client, `import time\ntime.sleep(0.3)\nprint('run ${i}')`));
    const results = await Promise.all(calls);
    results.forEach(({ sc }, i) => {
      assert.equal(sc.exit_code, 0);
      assert.equal(sc.stdout, `run ${i}\n`);
    });
  });

  test('runs share nothing: files, processes, Python state', async () => {
    const marker = `mpes-e2e-leak-${randomUUID()}`;
    const first = await run(conn.client, `
import builtins, json, os, subprocess, sys
open('/tmp/${marker}', 'w').write('x')
open('here.txt', 'w').write('x')
builtins.leaked = 1
json.leaked = 1
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '${marker}'])
print('ok')
`);
    assert.equal(first.sc.stdout, 'ok\n');
    await assertNoSurvivors(marker);
    const second = await run(conn.client, `
import builtins, json, os
print(os.path.exists('/tmp/${marker}'), os.listdir('.'), os.listdir('/tmp'),
      hasattr(builtins, 'leaked'), hasattr(json, 'leaked'))
`);
    assert.equal(second.sc.stdout, "False ['script.py'] [] False False\n");
  });

  test('two runs never draw the same random numbers', async () => {
    const script = 'import random, os\nprint(random.random(), os.urandom(4).hex())';
    const a = await run(conn.client, script);
    const b = await run(conn.client, script);
    assert.notEqual(a.sc.stdout, b.sc.stdout);
    const [ra] = a.sc.stdout.split(' ');
    const [rb] = b.sc.stdout.split(' ');
    assert.notEqual(ra, rb);
  });

  test('the sandbox shows nothing of the host: no /root, $HOME or server files', async () => {
    const { sc } = await run(conn.client, `
import os
print(os.path.exists('/root/.bashrc'), os.path.exists('/var/log'), os.path.exists('/work'),
      len([p for p in os.listdir('/proc') if p.isdigit()]) < 5, os.getpid() < 10)
`);
    assert.equal(sc.stdout, 'False False False True True\n');
  });
});

describe('execute_python with --sandbox-backend none', () => {
  test('runs, says it is unsandboxed, and leaves nothing running', async () => {
    const conn = await connect(['--sandbox-backend', 'none']);
    try {
      const { sc, result } = await run(conn.client, "import os\nprint('hi', os.listdir('.'))");
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.stdout, "hi ['script.py']\n");
      assert.equal(sc.sandbox, 'none (unsandboxed)');
      // Its work dir is one of the zygote's directory, which the zygote's own rehearsal run (the
      // pages a run writes) left nothing in.
      const cwd = (await run(conn.client, 'import os\nprint(os.getcwd())')).sc.stdout.trim();
      const root = path.dirname(cwd);
      assert.match(path.basename(cwd), /^mpes-run-/);
      assert.match(root, /^\/tmp\/mpes-none-/);
      const rehearsals = () => readdirSync(root).filter((name) => name.startsWith('mpes-rehearsal-'));
      for (let i = 0; i < 40 && rehearsals().length > 0; i++) await sleep(50);
      assert.deepEqual(rehearsals(), []);
      // Killed at its deadline: the child, and the daemon that left the run's session.
      const marker = `mpes-e2e-none-${randomUUID()}`;
      const t = await run(conn.client, treeScript(marker), { timeout_seconds: 1 });
      assert.equal(t.sc.timed_out, true);
      assert.equal(t.sc.stdout, 'partial\n');
      await assertNoSurvivors(marker);
      // Ending by itself: what it started ends with it.
      const ended = `mpes-e2e-none-end-${randomUUID()}`;
      const e = await run(conn.client, treeScript(ended).replace('time.sleep(600)\n', 'pass\n'));
      assert.equal(e.sc.exit_code, 0, e.text);
      await assertNoSurvivors(ended);
      // Cancelled: the same.
      const cancelled = `mpes-e2e-none-cancel-${randomUUID()}`;
      const controller = new AbortController();
      const pending = run(conn.client, treeScript(cancelled), { timeout_seconds: 60 }, { signal: controller.signal });
      for (let i = 0; i < 200 && !processesWith(`${cancelled}-daemon`); i++) await sleep(25);
      assert.ok(processesWith(`${cancelled}-daemon`), 'the run started its processes');
      controller.abort();
      await assert.rejects(pending);
      await assertNoSurvivors(cancelled);
    } finally {
      await conn.client.close();
    }
  });

  // A script that writes its work dir to `file` (/tmp is the host's here), then leaves a tree.
  const reportingTree = (marker, file) =>
    `import os\nwith open(${JSON.stringify(file)}, 'w') as f: f.write(os.getcwd())\n` + treeScript(marker);
  async function workDirOf(file) {
    for (let i = 0; i < 200 && !existsSync(file); i++) await sleep(25);
    const dir = readFileSync(file, 'utf8');
    rmSync(file, { force: true });
    return dir;
  }
  async function assertGone(dir) {
    for (let i = 0; i < 80 && existsSync(dir); i++) await sleep(50);
    assert.equal(existsSync(dir), false, `${dir} was left behind`);
  }

  // An unsandboxed server with a run in flight that has started its tree: the run's work dir.
  async function runInFlight(kind) {
    const conn = await connect(['--sandbox-backend', 'none']);
    const marker = `mpes-e2e-none-${kind}-${randomUUID()}`;
    const file = path.join(os.tmpdir(), `${marker}.cwd`);
    const pending = run(conn.client, reportingTree(marker, file), { timeout_seconds: 60 }).catch(() => null);
    for (let i = 0; i < 200 && !processesWith(`${marker}-daemon`); i++) await sleep(25);
    assert.ok(processesWith(`${marker}-daemon`), 'the run started its processes');
    const dir = await workDirOf(file);
    assert.match(dir, /^\/tmp\/mpes-none-[^/]+\/mpes-run-/);
    return { conn, marker, pending, dir };
  }

  test('a run in flight when the server stops leaves nothing running, nor its files', async () => {
    const { conn, marker, pending, dir } = await runInFlight('stop');
    process.kill(conn.transport.pid, 'SIGTERM');
    await conn.client.close();
    await pending;
    await assertNoSurvivors(marker);
    await assertGone(path.dirname(dir));  // the zygote's directory, with the run's in it
  });

  test('a server killed outright: the run in flight ends, and its work dir with it', async () => {
    const { conn, marker, pending, dir } = await runInFlight('kill');
    writeFileSync(path.join(dir, 'left.bin'), Buffer.alloc(4096));  // something of the run's own
    process.kill(conn.transport.pid, 'SIGKILL');
    await conn.client.close();
    await pending;
    await assertNoSurvivors(marker);
    // The run's init removes it; the zygote's directory stays until the next unsandboxed
    // server, which removes those of servers that are gone.
    await assertGone(dir);
    assert.ok(existsSync(path.dirname(dir)));
    const next = await connect(['--sandbox-backend', 'none']);
    try {
      const { sc } = await run(next.client, "print('next')");
      assert.equal(sc.stdout, 'next\n');
      await assertGone(path.dirname(dir));
    } finally {
      await next.client.close();
    }
  });
});

describe('stdin EOF with a run in flight', () => {
  // A server whose client wrote its requests and closed stdin.
  function startServer() {
    const child = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const state = { out: '' };
    child.stdout.on('data', (d) => { state.out += d; });
    const send = (msg) => child.stdin.write(`${JSON.stringify(msg)}\n`);
    send({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return { child, exited, state, send };
  }
  const responseTo = (state, id) => state.out.split('\n').filter(Boolean).map((l) => JSON.parse(l))
    .find((m) => m.id === id);

  test('the run is finished and answered, then the server exits 0', async () => {
    const marker = `mpes-e2e-eof-${randomUUID()}`;
    const { child, exited, state, send } = startServer();
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'execute_python', arguments: {
      script: `import time\nprint('started', flush=True)\ntime.sleep(1.5)\nprint('finished ${marker}')`,
      timeout_seconds: 60 } } });
    child.stdin.end();
    const { code } = await exited;
    assert.equal(code, 0);
    const response = responseTo(state, 2);
    assert.equal(response?.result?.structuredContent?.stdout, `started\nfinished ${marker}\n`, state.out);
    assert.equal(response.result.structuredContent.exit_code, 0);
  });

  test('SIGTERM while finishing stops the server promptly and kills the run', async () => {
    const marker = `mpes-e2e-eof-${randomUUID()}`;
    const { child, exited, state, send } = startServer();
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'execute_python', arguments: { script: treeScript(marker), timeout_seconds: 120 } } });
    child.stdin.end();
    for (let i = 0; i < 400 && !processesWith(`${marker}-daemon`); i++) await sleep(25);
    assert.ok(processesWith(`${marker}-daemon`), `the run started (server said: ${state.out})`);
    await sleep(300);
    assert.equal(child.exitCode, null, 'still finishing the run after end of input');
    const signalledAt = Date.now();
    child.kill('SIGTERM');
    const { code } = await exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - signalledAt < 5000, 'the server exited promptly after SIGTERM');
    await assertNoSurvivors(marker);
  });
});

describe('one zygote binary for every interpreter found', () => {
  test('a probe script runs on each CPython version this host has', async (t) => {
    const conn = await connect([]);
    try {
      const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
      const found = env.structuredContent?.interpreters ?? [];
      assert.ok(found.length >= 1, 'at least one interpreter is found');
      const covered = new Map();  // X.Y -> the interpreter that ran it
      for (const it of found) {
        const mm = it.version.split('.').slice(0, 2).join('.');
        if (!it.shared) {
          t.diagnostic(`skipped ${it.version} (${it.executable}): no shared libpython`);
          continue;
        }
        if (covered.has(mm)) {
          t.diagnostic(`skipped ${it.version} (${it.executable}): python_version ${mm} selects ${covered.get(mm)}`);
          continue;
        }
        const { result, text, sc } = await run(conn.client, [
          'import platform, subprocess, sys',
          'child = subprocess.check_output([sys.executable, "-c", "print(6 * 7)"], text=True)',
          'print(platform.python_version(), sys.executable, child.strip())',
        ].join('\n'), { python_version: mm });
        assert.equal(result.isError ?? false, false, text);
        const [version, executable, child] = sc.stdout.trim().split(' ');
        assert.equal(version.split('.').slice(0, 2).join('.'), mm, text);
        assert.ok(executable.endsWith(`python${mm}`), `sys.executable is the interpreter: ${executable}`);
        assert.equal(child, '42', 'sys.executable runs inside the sandbox');
        assert.equal(sc.python_version, version);
        covered.set(mm, `${version} (${executable})`);
        t.diagnostic(`ran on Python ${version} (${executable})`);
      }
    } finally {
      await conn.client.close();
    }
  });
});

describe('choosing an interpreter', () => {
  test('an unavailable version and an unmet requires-python are refused with every version found', async () => {
    // The first call of a fresh server: the refusal must not be sent before discovery is done.
    const conn = await connect([]);
    try {
      const script = '# /// script\n# requires-python = ">=3.99"\n# ///\nprint("never")\n';
      const refused = await run(conn.client, script);
      assert.equal(refused.result.isError, true, refused.text);
      assert.match(refused.text, /requires-python '>=3\.99' is not satisfied/);
      // Nothing ran, and nothing failed on our side: the request asked for what is not here.
      assert.equal(refused.sc.end_reason, 'refused', refused.text);
      assert.match(refused.text, /--- end: refused ---/);
      const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
      const versions = (env.structuredContent?.interpreters ?? []).map((it) => it.version);
      assert.ok(versions.length >= 1);
      for (const v of versions) assert.ok(refused.text.includes(v), `${v} is listed: ${refused.text}`);

      const missing = await run(conn.client, 'print(1)', { python_version: '3.1' });
      assert.equal(missing.result.isError, true, missing.text);
      assert.match(missing.text, /Python 3\.1 is not available on this host; available: /);
      assert.equal(missing.sc.end_reason, 'refused', missing.text);
      for (const v of versions) assert.ok(missing.text.includes(v), `${v} is listed: ${missing.text}`);
    } finally {
      await conn.client.close();
    }
  });
});

describe('--preload', () => {
  test('preloaded modules are already imported in runs; a broken one is skipped', async () => {
    const conn = await connect(['--preload', 'numpy', '--preload', 'no_such_module_mpes']);
    try {
      const { result, text, sc } = await run(conn.client,
        "import sys\nprint('numpy' in sys.modules, 'no_such_module_mpes' in sys.modules)");
      assert.equal(result.isError ?? false, false, text);
      assert.equal(sc.stdout, 'True False\n');
      // numpy's global generator is reseeded per run, like `random`.
      const script = 'import numpy as np\nprint(np.random.random())';
      const a = await run(conn.client, script);
      const b = await run(conn.client, script);
      assert.equal(a.sc.exit_code, 0, a.text);
      assert.notEqual(a.sc.stdout, b.sc.stdout);
      assert.match(conn.stderr(), /no_such_module_mpes/);
    } finally {
      await conn.client.close();
    }
  });

  test('a preload is the state the script would have made itself, or is not kept', async () => {
    // `this` prints when imported: preloaded, its output would never reach a run. It is
    // dropped, and the script's own import prints it as under python3. matplotlib.pyplot
    // (its package half-imported once by a zygote without a writable home) is whole.
    const conn = await connect(['--preload', 'this', '--preload', 'matplotlib.pyplot']);
    try {
      const zen = await run(conn.client, "import sys\nprint('this' in sys.modules)\nimport this\n");
      assert.equal(zen.sc.exit_code, 0, zen.text);
      assert.match(zen.sc.stdout, /^False\nThe Zen of Python, by Tim Peters\n\nBeautiful is better than ugly\./);
      assert.match(conn.stderr(), /preload this skipped: it writes output when imported/);
      const mpl = await run(conn.client, [
        'import sys',
        "print('matplotlib.pyplot' in sys.modules, 'matplotlib.colors' in sys.modules)",
        'import matplotlib',
        "matplotlib.use('Agg')",
        'import matplotlib.pyplot as plt',
        'fig, ax = plt.subplots()',
        'print(matplotlib.colors.to_hex("red"), matplotlib.get_configdir())',
      ].join('\n'));
      assert.equal(mpl.sc.exit_code, 0, mpl.text);
      assert.equal(mpl.sc.stdout, 'True True\n#ff0000 /home/sandbox/.config/matplotlib\n');
      assert.equal(mpl.sc.stderr, '');
    } finally {
      await conn.client.close();
    }
  });
});
