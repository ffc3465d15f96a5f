// Injected faults, each through the real MCP SDK client: the parts under the server break on
// purpose (and one script attacks the result channel) and the server must say what failed, lose
// nothing else, leave no process or fd behind, and keep answering. Runs as root and as an
// unprivileged user (scripts/test.sh).
//
// The full-filesystem case needs a small filesystem for --cache-dir: as root the test mounts a
// tmpfs itself; an unprivileged run is handed one in MPES_FAULT_SMALL_FS (scripts/test.sh makes
// it) and skips the case without it.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connect, serverPath, textOf } from './lib/client.mjs';
import { alive, ppidOf, tree } from './lib/procs.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PYTHON = '/usr/bin/python3';
const isRoot = process.getuid() === 0;

// ---- the process tree -------------------------------------------------------------------------

function cmdlineOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

// The server's open fds by kind (pidfd, socket, pipe, a cgroup's file, ...).
function fdKinds(pid) {
  const kinds = {};
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    try {
      target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;  // closed meanwhile
    }
    const kind = target.startsWith('/sys/fs/cgroup/') ? 'cgroup'
      : target.replace(/:\[\d+\]$/, '').replace(/^anon_inode:\[(\w+)\]$/, 'anon_inode:$1');
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

// A zygote: the zygote program whose parent is not one (below it are its runs and spares, forks
// of it with the same command line).
const isZygoteProgram = (p) => /(^|\/)(mcp-python-exec-sandbox-)?zygote$/.test(cmdlineOf(p)[0] ?? '');
const zygotes = (server) => tree(server).filter((p) => isZygoteProgram(p) && !isZygoteProgram(ppidOf(p)));

// The tree once it has stopped changing for a second (spares re-forked, runs reaped, interpreter
// probes done): process count and the server's open fds.
async function quiet(server, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  let stable = 0;
  for (;;) {
    const now = { processes: tree(server).length, fds: fdKinds(server) };
    const key = JSON.stringify(now);
    stable = key === last ? stable + 1 : 0;
    last = key;
    if (stable >= 10 || Date.now() > deadline) return now;
    await sleep(100);
  }
}

// Waits until every pid is gone (reaped or at least dead); returns the ones still alive.
async function gone(pids, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = pids.filter(alive);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(50);
  }
}

async function waitFor(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

// ---- calls ------------------------------------------------------------------------------------

async function run(client, script, { timeout = 30, dependencies, options } = {}) {
  const args = { script, timeout_seconds: timeout };
  if (dependencies) args.dependencies = dependencies;
  const result = await client.callTool({ name: 'execute_python', arguments: args }, undefined,
    { timeout: 180000, ...(options ?? {}) });
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

async function hello(client) {
  const { sc, text } = await run(client, 'print("hello")\n');
  assert.equal(sc.stdout, 'hello\n', text);
  assert.equal(sc.exit_code, 0, text);
}

// The end state every fault must reach: the server answers, its tree is the size it was and it
// holds the fds it held; when it closes, nothing of its tree is left.
async function assertRecovered(conn, base, what) {
  await hello(conn.client);
  const now = await quiet(conn.transport.pid);
  assert.equal(now.processes, base.processes, `${what}: processes of the server's tree`);
  // A spare the zygote forked for a call that found none of the server's ready stays the
  // zygote's own (the next such call takes it): the tree is the same size, and the server holds
  // that spare's pidfd and hand-off socket fewer. Every other kind of fd is as it was.
  const fewer = (base.fds['anon_inode:pidfd'] ?? 0) - (now.fds['anon_inode:pidfd'] ?? 0);
  assert.ok(fewer >= 0 && fewer <= 2, `${what}: the server's pidfds ${JSON.stringify(now.fds)} against ${JSON.stringify(base.fds)}`);
  const expected = { ...base.fds, 'anon_inode:pidfd': (base.fds['anon_inode:pidfd'] ?? 0) - fewer,
                     socket: (base.fds.socket ?? 0) - fewer };
  for (const kind of Object.keys(expected)) if (expected[kind] === 0) delete expected[kind];
  assert.deepEqual(now.fds, expected, `${what}: the server's open fds`);
}

async function closeAndCheck(conn) {
  const pids = tree(conn.transport.pid);
  await conn.client.close();
  assert.deepEqual(await gone(pids), [], 'no process of the tree outlives the server');
}

// Without cache warming: it starts on a timer (10 s in) and its installer's processes would be
// counted against the state a fault must return to.
async function start(args = [], opts = {}) {
  const conn = await connect(['--no-warm-cache', ...args], opts);
  await hello(conn.client);
  return { conn, base: await quiet(conn.transport.pid) };
}

// ---- wheels for the installer cases -----------------------------------------------------------

// mpes_leaf: a plain wheel. mpes_slowbuild: an sdist whose build backend takes a few seconds
// (the window in which the installer is killed), then builds a working wheel.
const WRITER = String.raw`
import base64, hashlib, io, os, sys, tarfile, zipfile
out = sys.argv[1]
def wheel_bytes(name, files):
    dist = "%s-1.0.dist-info" % name
    files = dict(files)
    files[dist + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name).encode()
    files[dist + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: mpes-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rec = ["%s,sha256=%s,%d" % (p, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode(), len(d)) for p, d in files.items()]
    files[dist + "/RECORD"] = ("\n".join(rec + [dist + "/RECORD,,"]) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
    return buf.getvalue()
open(os.path.join(out, "mpes_leaf-1.0-py3-none-any.whl"), "wb").write(
    wheel_bytes("mpes_leaf", {"mpes_leaf/__init__.py": b"VERSION = '1.0'\n"}))
backend = (
    "import os, time\n"
    "WHEEL = %r\n"
    "def get_requires_for_build_wheel(config_settings=None):\n    return []\n"
    "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
    "    time.sleep(4)\n"
    "    name = 'mpes_slowbuild-1.0-py3-none-any.whl'\n"
    "    open(os.path.join(wheel_directory, name), 'wb').write(WHEEL)\n"
    "    return name\n") % (wheel_bytes("mpes_slowbuild", {"mpes_slowbuild/__init__.py": b"OK = True\n"}),)
base = "mpes_slowbuild-1.0"
sdist = {"pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "mpes_backend"\nbackend-path = ["."]\n',
         "PKG-INFO": "Metadata-Version: 2.1\nName: mpes_slowbuild\nVersion: 1.0\n", "mpes_backend.py": backend}
with tarfile.open(os.path.join(out, base + ".tar.gz"), "w:gz") as t:
    for n, text in sdist.items():
        data = text.encode()
        info = tarfile.TarInfo(base + "/" + n)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
`;

function tempDir(prefix, parent = os.tmpdir()) {
  fs.mkdirSync(parent, { recursive: true });
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o755);  // the installer runs unprivileged when the server is root
  return dir;
}

// Caches live under ~/.cache (a run's sandbox replaces /tmp with its own).
const cacheRoot = () => path.join(os.homedir(), '.cache');

const wheels = tempDir('mpes-e2e-fault-wheels-');
execFileSync(PYTHON, ['-I', '-c', WRITER, wheels]);
process.on('exit', () => fs.rmSync(wheels, { recursive: true, force: true }));

const installArgs = (cache) => ['--find-links', wheels, '--offline', '--cache-dir', cache, '--log-level', 'info'];

function environments(cache) {
  const envs = path.join(cache, 'envs');
  return fs.existsSync(envs) ? fs.readdirSync(envs).filter((n) => /^[0-9a-f]{64}$/.test(n)) : [];
}
function buildDirs(cache) {
  const envs = path.join(cache, 'envs');
  return fs.existsSync(envs) ? fs.readdirSync(envs).filter((n) => n.startsWith('.tmp-')) : [];
}
const installerRuns = (conn) => (conn.stderr().match(/installing \d+ requirement\(s\) with /g) ?? []).length;

// ---- the faults -------------------------------------------------------------------------------

describe('faults', () => {
  test('a zygote killed mid-run: that run is a sandbox failure, a new zygote serves the next', async (t) => {
    const { conn, base } = await start();
    try {
      const [zygote] = zygotes(conn.transport.pid);
      assert.ok(zygote, 'the default zygote runs');
      const pending = run(conn.client, 'import time\ntime.sleep(30)\n', { timeout: 60 });
      await sleep(1000);
      process.kill(zygote, 'SIGKILL');
      const t0 = Date.now();
      const { result, sc, text } = await pending;
      assert.ok(Date.now() - t0 < 5000, 'answered promptly');
      assert.equal(sc.end_reason, 'sandbox_error', text);
      assert.equal(result.isError, true, text);
      assert.match(text, /zygote/i, 'the error says the warm interpreter failed');
      t.diagnostic(`answered ${Date.now() - t0} ms after the kill: ${text.split('\n')[0]}`);
      await assertRecovered(conn, base, 'after the zygote was killed');
      assert.ok(!zygotes(conn.transport.pid).includes(zygote), 'a new zygote, not the killed one');
    } finally {
      await closeAndCheck(conn);
    }
  });

  test('a zygote stopped for 5 s: runs still time out on time and the server answers', async (t) => {
    const { conn, base } = await start();
    const stopped = zygotes(conn.transport.pid);
    try {
      assert.ok(stopped.length >= 1);
      const sleeper = run(conn.client, 'import time\ntime.sleep(30)\n', { timeout: 2 });
      await sleep(300);
      for (const z of stopped) process.kill(z, 'SIGSTOP');
      const t0 = Date.now();
      // A call that arrives while the zygote is stopped: answered by its deadline, not lost.
      const waiting = run(conn.client, 'print("late")\n', { timeout: 2 });
      const p0 = Date.now();
      await conn.client.ping();
      assert.ok(Date.now() - p0 < 1000, 'ping answered while the zygote is stopped');

      const first = await sleeper;
      assert.equal(first.sc.end_reason, 'timeout', first.text);
      // Before the zygote is continued (5 s): the deadline is the server's, not the zygote's.
      assert.ok(Date.now() - t0 < 4500, `the 2 s deadline held (${Date.now() - t0} ms after the stop)`);
      t.diagnostic(`timeout answered ${Date.now() - t0} ms after the stop (deadline 2 s from dispatch)`);
      const second = await waiting;
      t.diagnostic(`the call sent during the stop: ${second.sc.end_reason} after ${Date.now() - t0} ms`);
      assert.ok(Date.now() - t0 < 4800, 'the call sent during the stop was answered by its deadline');
      assert.ok(second.sc.end_reason === 'timeout' || second.sc.stdout === 'late\n', second.text);

      const rest = 5000 - (Date.now() - t0);
      if (rest > 0) await sleep(rest);
      for (const z of stopped) process.kill(z, 'SIGCONT');
      await assertRecovered(conn, base, 'after the zygote was stopped and continued');
    } finally {
      for (const z of stopped) { try { process.kill(z, 'SIGCONT'); } catch { /* gone */ } }
      await closeAndCheck(conn);
    }
  });

  test('the spares a zygote prepared, killed before their runs: the next calls are still answered', async (t) => {
    const { conn, base } = await start();
    try {
      const [zygote] = zygotes(conn.transport.pid);
      assert.ok(zygote, 'the default zygote runs');
      // Its spares: forks of it waiting for a run (the server holds their hand-off sockets).
      const spares = await waitFor(() => {
        const found = tree(conn.transport.pid).filter((p) => ppidOf(p) === zygote && isZygoteProgram(p));
        return found.length >= 2 ? found : null;
      }, 10000, 'two spares');
      const theirs = spares.flatMap((s) => tree(s));
      for (const s of spares) process.kill(s, 'SIGKILL');
      assert.deepEqual(await gone(theirs), [], 'the spares and their script processes are gone');
      t.diagnostic(`killed ${spares.length} spares (${theirs.length} processes)`);
      // The first call finds only dead spares: it must still run, in a new one.
      for (let i = 0; i < 3; i++) await hello(conn.client);
      await assertRecovered(conn, base, 'after the spares were killed');
    } finally {
      await closeAndCheck(conn);
    }
  });

  test('an installer killed mid-install: no half environment, the next call installs again', async (t) => {
    const cache = tempDir('mpes-e2e-fault-cache-', cacheRoot());
    // No before/after tree comparison here: the new environment brings its own zygote.
    const { conn } = await start(installArgs(cache));
    try {
      const script = 'import mpes_slowbuild\nprint(mpes_slowbuild.OK)\n';
      const pending = run(conn.client, script, { dependencies: ['mpes_slowbuild'] });
      // The installer of the pass that builds (no shared cache: --no-cache, --no-cache-dir): the
      // first process of the tree running pip or uv (its build backend is below it).
      const isInstaller = (p) => {
        const argv = cmdlineOf(p);
        return (argv.includes('pip') || argv.some((a) => path.basename(a) === 'uv')) &&
          argv.some((a) => a === '--no-cache' || a === '--no-cache-dir');
      };
      const installer = await waitFor(() => tree(conn.transport.pid).find(isInstaller), 60000, 'the installer');
      await sleep(1500);  // inside the build backend's sleep
      const installerTree = tree(installer);
      process.kill(installer, 'SIGKILL');
      const { sc, text } = await pending;
      // An install failure is the call's result (exit 1, the reason on stderr), as `uv run` has it.
      assert.equal(sc.end_reason, 'install_failed', text);
      assert.equal(sc.exit_code, 1, text);
      assert.match(sc.stderr, /installer \((pip|uv)\) was killed by signal 9 \(SIGKILL\)/, text);
      t.diagnostic(sc.stderr.split('\n')[0]);
      assert.deepEqual(await gone(installerTree), [], 'nothing of the installer is left');
      assert.deepEqual(environments(cache), [], 'no environment from the killed install');
      assert.deepEqual(buildDirs(cache), [], 'its build directory is removed');

      const runsBefore = installerRuns(conn);
      const again = await run(conn.client, script, { dependencies: ['mpes_slowbuild'] });
      assert.equal(again.sc.stdout, 'True\n', again.text);
      assert.equal(installerRuns(conn), runsBefore + 1, 'the next call installed again');
      assert.equal(environments(cache).length, 1);
      await hello(conn.client);
    } finally {
      await closeAndCheck(conn);
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });

  test('--cache-dir on a full filesystem: a clear install error, runs unaffected, recovers', async (t) => {
    let dir = process.env.MPES_FAULT_SMALL_FS;
    let mounted = false;
    if (!dir) {
      if (!isRoot) {
        t.skip('needs root, or a small filesystem in MPES_FAULT_SMALL_FS (scripts/test.sh makes one)');
        return;
      }
      dir = tempDir('mpes-e2e-fault-fullfs-', cacheRoot());
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0755', 'tmpfs', dir]);
      mounted = true;
    }
    const cache = path.join(dir, 'cache');
    const filler = path.join(dir, 'filler');
    // Never fill a real disk: the filesystem must be a small one made for this.
    const { blocks, bsize } = fs.statfsSync(dir);
    assert.ok(blocks * bsize <= 64 << 20, `${dir} is not a small filesystem (${blocks * bsize} bytes)`);
    try {
      fs.mkdirSync(cache, { mode: 0o755 });
      fs.chmodSync(cache, 0o755);
      // Fill the filesystem to the last block.
      const fd = fs.openSync(filler, 'w');
      const block = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) fs.writeSync(fd, block);
      } catch (e) {
        assert.equal(e.code, 'ENOSPC');
      }
      try { for (;;) fs.writeSync(fd, Buffer.alloc(512, 1)); } catch { /* full */ }
      fs.closeSync(fd);

      const { conn, base } = await start(installArgs(cache));
      try {
        const failed = await run(conn.client, 'import mpes_leaf\n', { dependencies: ['mpes_leaf'] });
        assert.equal(failed.sc.end_reason, 'install_failed', failed.text);
        assert.equal(failed.sc.exit_code, 1, failed.text);
        assert.match(failed.text, /no space left on device|ENOSPC/i, 'the error names the full disk');
        t.diagnostic(failed.sc.stderr.split('\n').slice(-1)[0]);
        assert.match(failed.text, new RegExp(cache.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
          'the error says where');
        assert.deepEqual(environments(cache), []);
        await assertRecovered(conn, base, 'after the failed install');

        fs.rmSync(filler);
        const ok = await run(conn.client, 'import mpes_leaf\nprint(mpes_leaf.VERSION)\n', { dependencies: ['mpes_leaf'] });
        assert.equal(ok.sc.stdout, '1.0\n', ok.text);
        assert.equal(environments(cache).length, 1);
      } finally {
        await closeAndCheck(conn);
      }
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
      fs.rmSync(filler, { force: true });
      if (mounted) {
        execFileSync('umount', [dir]);
        fs.rmdirSync(dir);
      }
    }
  });

  test('a run filling its work dir gets ENOSPC; the next run has its space back', async () => {
    const { conn, base } = await start(['--tmpfs-size-mb', '16']);
    try {
      const fill = await run(conn.client, [
        'import os',
        'try:',
        '    with open("fill.bin", "wb") as f:',
        '        while True:',
        '            f.write(b"x" * (1 << 20))',
        'except OSError as e:',
        '    print("errno", e.errno, os.path.getsize("fill.bin") // (1 << 20))',
        '    raise',
      ].join('\n'));
      assert.equal(fill.sc.exit_code, 1, fill.text);
      assert.match(fill.sc.stdout, /^errno 28 1[0-6]\n$/, fill.text);
      assert.match(fill.sc.stderr, /No space left on device/, fill.text);

      const next = await run(conn.client, [
        'import os',
        'print("fill.bin" in os.listdir("."))',
        'open("again.bin", "wb").write(b"y" * (8 << 20))',
        'print(os.path.getsize("again.bin"))',
      ].join('\n'));
      // Nothing of the previous run's work dir is left (the runner may put the script there).
      assert.equal(next.sc.stdout, `False\n${8 << 20}\n`, next.text);
      await assertRecovered(conn, base, 'after a run filled its tmpfs');
    } finally {
      await closeAndCheck(conn);
    }
  });

  test('the server\'s fd limit lowered to 64 while 16 calls arrive', async (t) => {
    const transport = new StdioClientTransport({
      command: '/bin/bash',
      args: ['-c', 'ulimit -n 64 && exec "$0" "$@"', serverPath, '--max-concurrent-runs', '16'],
      env: { ...process.env },
      stderr: 'pipe',
    });
    let stderrText = '';
    transport.stderr?.on('data', (d) => { stderrText += d.toString(); });
    const client = new Client({ name: 'mpes-e2e', version: '1.0.0' });
    await client.connect(transport);
    const conn = { client, transport, stderr: () => stderrText };
    try {
      const limits = fs.readFileSync(`/proc/${transport.pid}/limits`, 'utf8');
      assert.match(limits, /Max open files\s+64\s+64/);
      await hello(client);
      const base = await quiet(transport.pid);
      const script = 'import time\ntime.sleep(0.5)\nprint("ok")\n';
      const results = await Promise.all(Array.from({ length: 16 }, () => run(client, script)));
      let ok = 0;
      const reasons = new Set();
      for (const { result, sc, text } of results) {
        if (sc.stdout === 'ok\n' && sc.exit_code === 0) {
          ok += 1;
          continue;
        }
        reasons.add(text.split('\n')[0]);
        // A call the server could not start says why; nothing is answered with a broken result.
        assert.equal(result.isError, true, text);
        assert.match(text, /file descriptors|too many open files|EMFILE/i, text);
        assert.match(text, /ulimit -n/, `a refusal for want of fds names the limit to raise: ${text}`);
      }
      assert.ok(ok >= 1, 'some calls ran');
      t.diagnostic(`${ok} of 16 ran; the others: ${[...reasons].join(' | ') || '-'}`);
      await assertRecovered(conn, base, 'after the fd limit was hit');
      // Sequentially, every call runs.
      for (let i = 0; i < 4; i++) await hello(client);
    } finally {
      await closeAndCheck(conn);
    }
    assert.doesNotMatch(stderrText, /terminate called|Assertion|AddressSanitizer/);
  });

  test('the client vanishing while a large result is being written (EPIPE)', async (t) => {
    const conn = await connect(['--max-output-bytes', String(8 << 20)]);
    const server = conn.transport.pid;
    const proc = conn.transport._process;  // the SDK keeps the child here (1.x)
    assert.ok(proc, 'the SDK transport exposes its child process');
    const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    await hello(conn.client);
    const pids = tree(server);
    let received = 0;
    proc.stdout.on('data', (d) => { received += d.length; });
    // 2 x 4 MiB of text (content and structuredContent): far beyond a pipe's buffer.
    const pending = run(conn.client, 'import sys, time\ntime.sleep(1)\nsys.stdout.write("z" * (4 << 20))\n')
      .catch((e) => e);
    await sleep(200);
    proc.stdout.pause();  // the client stops reading...
    await sleep(3000);    // ...the run ends and the server is blocked writing its result
    assert.ok(alive(server));
    const before = received;
    await sleep(200);
    assert.equal(received, before, 'the client reads nothing more');
    assert.ok(received < 1 << 20, `the 8 MiB result was not read (${received} bytes were)`);
    proc.stdout.destroy();  // ...and vanishes: the server's next write fails with EPIPE
    proc.stdin.destroy();
    const t0 = Date.now();
    const exit = await Promise.race([exited, sleep(10000).then(() => null)]);
    assert.ok(exit, 'the server exits when its client is gone');
    assert.ok(Date.now() - t0 < 10000);
    assert.equal(exit.signal, null, `the server was not killed by a signal (${exit.signal})`);
    assert.equal(exit.code, 0, conn.stderr().slice(-2000));
    t.diagnostic(`the server exited ${Date.now() - t0} ms after its client vanished, status ${exit.code}`);
    assert.deepEqual(await gone(pids), [], 'no process of the tree outlives the server');
    assert.deepEqual(await gone(tree(server)), []);
    await pending;
    await conn.client.close().catch(() => {});
    assert.doesNotMatch(conn.stderr(), /terminate called|Assertion|AddressSanitizer/);
  });

  test('a script writing a 4-million-deep JSON value on its result channel', async () => {
    // The channel's fd is the script's to write: a value no runner makes must not take the
    // server down (it did: serialising it overflowed the stack).
    const { conn, base } = await start(['--max-output-bytes', String(16 << 20)]);
    try {
      const { sc, text } = await run(conn.client, [
        'import os, struct',
        'deep = b"[" * 4000000 + b"]" * 4000000',
        'frame = lambda t, p: struct.pack("<IB", len(p), t) + p',
        'os.write(5, frame(1, b"deep") + frame(2, deep) + frame(5, struct.pack("<iqqqq", 0, 0, 0, 0, 0)))',
        'os.close(5)',
      ].join('\n'));
      assert.equal(sc.exit_code, 0, text);
      assert.deepEqual(sc.return_value, { repr: 'deep' }, 'the repr is kept, the JSON form dropped');
      await assertRecovered(conn, base, 'after a hostile result channel');
    } finally {
      await closeAndCheck(conn);
    }
  });

  test('1,000 cancellations racing their runs\' ends', async (t) => {
    const { conn, base } = await start();
    try {
      const script = 'import time\ntime.sleep(0.002)\nprint("done")\n';
      let answered = 0;
      let cancelled = 0;
      let index = 0;
      const worker = async () => {
        while (index < 1000) {
          const i = index++;
          const controller = new AbortController();
          const call = run(conn.client, script, { options: { signal: controller.signal } });
          // Cancel at a moment spread over 0-150 ms: before, during and after the run's end.
          setTimeout(() => controller.abort("racing"), (i * 13) % 150);
          try {
            const { sc, text } = await call;
            assert.equal(sc.stdout, 'done\n', text);
            answered += 1;
          } catch (e) {
            assert.ok(controller.signal.aborted, `only the cancelled calls fail: ${e}`);
            cancelled += 1;
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      assert.equal(answered + cancelled, 1000);
      t.diagnostic(`${answered} answered before their cancellation, ${cancelled} cancelled`);
      assert.ok(cancelled > 0 && answered > 0, `both sides of the race happened (${answered} answered, ${cancelled} cancelled)`);
      await assertRecovered(conn, base, 'after 1,000 cancellations');
    } finally {
      await closeAndCheck(conn);
    }
  });
});

