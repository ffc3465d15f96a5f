// Hostile dependencies: sdists in a local wheelhouse whose build backends attack the installer's
// sandbox (kernel calls, memory, processes, a daemon, sleeping past the call's deadline). Each
// backend reports what it achieved in the message of the exception that fails its build, so the
// result's installer lines show it; the tests assert each attack was stopped. Runs as root and as
// an unprivileged user (the installer's limits come from a cgroup or, without one, rlimits).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { connect, textOf } from './lib/client.mjs';
import { PYTHON, writePackages } from './lib/wheelhouse.mjs';
import { findUv, envWithUv, uvUnavailable, userEnv } from './lib/tools.mjs';
import { startAbstractListener } from './lib/abstract_socket.mjs';
import { canUserMode } from './lib/user_network.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const HOSTILE = [
  {
    // The run's syscall filter and no_new_privs are in force in the build.
    name: 'mpes_h_syscalls', version: '1.0', sdist_backend: String.raw`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
out = []
for name, nr, args in [("io_uring_setup", 425, (1, 0)), ("perf_event_open", 298, (0, 0, -1, -1, 0)),
                       ("bpf", 321, (0, 0, 0)), ("keyctl", 250, (0, 0, 0, 0, 0))]:
    r = libc.syscall(nr, *args)
    out.append("%s=%s" % (name, "ok" if r >= 0 else os.strerror(ctypes.get_errno()).replace(" ", "_")))
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
out.append("Seccomp=" + status.get("Seccomp", "?").strip())
out.append("NoNewPrivs=" + status.get("NoNewPrivs", "?").strip())
raise RuntimeError("HOSTILE_" + "RESULT " + " ".join(out))
`,
  },
  {
    // 2 GiB written page by page: stopped by the memory limit (cgroup OOM or RLIMIT_DATA).
    name: 'mpes_h_memory', version: '1.0', sdist_backend: String.raw`
x = bytearray(b"x") * (2 << 30)
raise RuntimeError("HOSTILE_" + "RESULT allocated %d" % len(x))
`,
  },
  {
    // 300 processes: stopped by the process limit (pids cgroup or RLIMIT_NPROC).
    name: 'mpes_h_forks', version: '1.0', sdist_backend: String.raw`
import os, time
n = 0
for i in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(1)
        os.close(2)
        time.sleep(30)
        os._exit(0)
    n += 1
raise RuntimeError("HOSTILE_" + "RESULT forked %d" % n)
`,
  },
  {
    // A daemon (double fork, new session) left behind by a failing build.
    name: 'mpes_h_daemon', version: '1.0', sdist_backend: String.raw`
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "HOSTILE_DAEMON_MARK"])
    os._exit(0)
time.sleep(1)
raise RuntimeError("HOSTILE_" + "RESULT daemon started")
`,
  },
  {
    // Sleeps far past the call's timeout, with a child that would sleep on.
    name: 'mpes_h_sleep', version: '1.0', sdist_backend: String.raw`
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "HOSTILE_SLEEPER_MARK"])
time.sleep(300)
`,
  },
];

function tempDir(prefix, parent = os.tmpdir()) {
  fs.mkdirSync(parent, { recursive: true });
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o755);  // the installer runs unprivileged when the server is root
  return dir;
}

// Command lines of every process on the host that contain `mark`.
function processesWith(mark) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(mark)) found.push(`${pid}: ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function buildDirs(cacheDir) {
  const envs = path.join(cacheDir, 'envs');
  if (!fs.existsSync(envs)) return [];
  return fs.readdirSync(envs).filter((n) => n.startsWith('.tmp-'));
}

const wheels = tempDir('mpes-e2e-hostile-');
writePackages(wheels, HOSTILE);
process.on('exit', () => fs.rmSync(wheels, { recursive: true, force: true }));

describe('hostile build backends', () => {
  let conn;
  let cache;
  before(async () => {
    cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
    conn = await connect(['--find-links', wheels, '--offline', '--cache-dir', cache,
      '--max-processes', '64', '--memory-limit-mb', '512', '--log-level', 'info']);
  });
  after(async () => {
    await conn?.client.close();
    fs.rmSync(cache, { recursive: true, force: true });
  });

  async function install(pkg, timeoutSeconds = 120, options = {}) {
    const started = Date.now();
    const result = await conn.client.callTool(
      { name: 'execute_python', arguments: { script: 'print("ran")\n', dependencies: [pkg], timeout_seconds: timeoutSeconds } },
      undefined, { timeout: 180000, ...options },
    );
    const sc = result.structuredContent ?? {};
    return { text: textOf(result), sc, elapsed: Date.now() - started };
  }

  test('kernel calls are denied by the runs seccomp filter, with no_new_privs', async () => {
    const { text, sc } = await install('mpes_h_syscalls');
    assert.equal(sc.end_reason, 'install_failed', text);
    const m = text.match(/HOSTILE_RESULT ([^\n]*)/);
    assert.ok(m, text);
    for (const call of ['io_uring_setup', 'perf_event_open', 'bpf', 'keyctl']) {
      assert.match(m[1], new RegExp(`${call}=Operation_not_permitted`), m[1]);
    }
    assert.match(m[1], /Seccomp=2/);
    assert.match(m[1], /NoNewPrivs=1/);
  });

  test('a 2 GiB allocation is stopped by the memory limit', async () => {
    const { text, sc } = await install('mpes_h_memory');
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.doesNotMatch(text, /HOSTILE_RESULT allocated/);
    assert.match(text, /MemoryError|memory limit|killed by signal 9/, text);
  });

  test('300 forks are stopped by the process limit', async () => {
    const { text, sc } = await install('mpes_h_forks');
    assert.equal(sc.end_reason, 'install_failed', text);
    const m = text.match(/HOSTILE_RESULT forked (\d+)/);
    if (m) assert.ok(Number(m[1]) < 64, text);
    else assert.match(text, /process limit/, text);
    await sleep(500);
    assert.deepEqual(processesWith('mpes_h_forks'), []);
  });

  test('a daemon a build leaves is gone with the build', async () => {
    const { text, sc } = await install('mpes_h_daemon');
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.match(text, /HOSTILE_RESULT daemon started/, text);
    await sleep(500);
    assert.deepEqual(processesWith('HOSTILE_DAEMON_MARK'), []);
  });

  test('a build sleeping past the call timeout is answered in time and killed, tree and all', async () => {
    const { text, sc, elapsed } = await install('mpes_h_sleep', 4);
    assert.equal(sc.end_reason, 'timeout', text);
    assert.ok(elapsed < 4000 + 2500, `answered after ${elapsed} ms`);
    for (let i = 0; i < 40 && processesWith('HOSTILE_SLEEPER_MARK').length > 0; i++) await sleep(50);
    assert.deepEqual(processesWith('HOSTILE_SLEEPER_MARK'), []);
    for (let i = 0; i < 40 && buildDirs(cache).length > 0; i++) await sleep(50);
    assert.deepEqual(buildDirs(cache), [], 'no half-built environment stays');
  });

  test('cancelling the call kills the install', async () => {
    const controller = new AbortController();
    const pending = install('mpes_h_sleep', 120, { signal: controller.signal }).catch((e) => e);
    for (let i = 0; i < 600 && processesWith('HOSTILE_SLEEPER_MARK').length === 0; i++) await sleep(50);
    assert.ok(processesWith('HOSTILE_SLEEPER_MARK').length > 0, 'the build started');
    controller.abort();
    await pending;
    for (let i = 0; i < 60 && processesWith('HOSTILE_SLEEPER_MARK').length > 0; i++) await sleep(50);
    assert.deepEqual(processesWith('HOSTILE_SLEEPER_MARK'), []);
    for (let i = 0; i < 40 && buildDirs(cache).length > 0; i++) await sleep(50);
    assert.deepEqual(buildDirs(cache), [], 'no half-built environment stays');
  });
});

// The installer's network: its own namespace behind pasta (as root, or unprivileged where
// /dev/net/tun is open to the server's user; otherwise the host's, said in its log). A build backend tries the host's
// loopback and abstract sockets, a metadata address, and the index's host.
// What each network probe starts with: attempt() records "name=reached" or the error.
const PROBE_HELPERS = String.raw`
import socket
out = []
def attempt(name, connect):
    try:
        connect()
        out.append(name + "=reached")
    except OSError as e:
        out.append(name + "=" + (e.strerror or type(e).__name__).replace(" ", "_"))
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(b"\0" + ABSTRACT.encode())
`;
const NETWORK_BACKEND = PROBE_HELPERS + String.raw`
attempt("loopback", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=3))
attempt("abstract", abstract)
attempt("metadata", lambda: socket.create_connection(("169.254.169.254", 80), timeout=3))
attempt("internet", lambda: socket.create_connection(("pypi.org", 443), timeout=15))
raise RuntimeError("HOSTILE_" + "RESULT " + " ".join(out))
`;


describe('the installer network', {
  skip: !canUserMode() && 'a user-mode network for installers needs root or /dev/net/tun open to the server',
}, () => {
  let conn;
  let cache;
  let netWheels;
  const servers = [];
  let abstractServer;
  before(async () => {
    const listen = (server, arg) => new Promise((resolve) => server.listen(arg, resolve));
    const tcp = net.createServer((c) => c.end('host loopback\n'));
    await listen(tcp, { host: '127.0.0.1', port: 0 });
    const abstractName = `mpes-hostile-${process.pid}`;
    abstractServer = await startAbstractListener(PYTHON, abstractName);
    servers.push(tcp);
    netWheels = tempDir('mpes-e2e-hostile-net-');
    const backend = `PORT = ${tcp.address().port}\nABSTRACT = ${JSON.stringify(abstractName)}\n${NETWORK_BACKEND}`;
    writePackages(netWheels, [{ name: 'mpes_h_network', version: '1.0', sdist_backend: backend }]);
    cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
    // Not --offline: the installer has a network (the index is asked, then --find-links used).
    conn = await connect(['--find-links', netWheels, '--cache-dir', cache, '--log-level', 'info']);
  });
  after(async () => {
    await conn?.client.close();
    for (const s of servers) s.close();
    abstractServer?.kill('SIGKILL');
    fs.rmSync(cache, { recursive: true, force: true });
    fs.rmSync(netWheels, { recursive: true, force: true });
  });

  test('a build reaches the internet but not the host loopback, abstract sockets or metadata', async () => {
    const result = await conn.client.callTool(
      { name: 'execute_python', arguments: { script: 'print("ran")\n', dependencies: ['mpes_h_network'], timeout_seconds: 120 } },
      undefined, { timeout: 180000 },
    );
    const text = textOf(result);
    const m = text.match(/HOSTILE_RESULT ([^\n]*)/);
    assert.ok(m, text);
    assert.match(m[1], /loopback=Connection_refused/);
    assert.match(m[1], /abstract=Connection_refused/);
    assert.doesNotMatch(m[1], /metadata=reached/);
    assert.match(m[1], /internet=reached/);
  });
});

// --network off: the installer front-end (uv) still fetches from the index, but a build from
// source runs with no network at all, as root and unprivileged (its interpreter is a stand-in
// that takes the network away, engine/environments/build_python.h). The backend tries the host's
// loopback, an address outside, UDP, an abstract socket, and whether a child it starts fares better.
const NO_NETWORK_BACKEND = PROBE_HELPERS + String.raw`
import subprocess, sys
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53))
attempt("loopback", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=3))
attempt("outside", lambda: socket.create_connection(("192.0.2.1", 443), timeout=5))
attempt("udp", udp)
attempt("abstract", abstract)
child = subprocess.run([sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', %d), timeout=3)" % PORT],
                       capture_output=True, text=True)
out.append("child=" + ("reached" if child.returncode == 0 else child.stderr.strip().splitlines()[-1].split(": ", 1)[-1].replace(" ", "_")))
raise RuntimeError("HOSTILE_" + "RESULT " + " ".join(out))
`;

describe('--network off: builds have no network, the front-end still fetches', () => {
  const uv = findUv();
  const skip = !uv && `SKIPPED: ${uvUnavailable}`;
  let conn;
  let cache;
  let offWheels;
  let tcp;
  let abstractServer;
  let arrivals = 0;
  before(async () => {
    if (skip) return;
    tcp = net.createServer((c) => { arrivals += 1; c.end('host loopback\n'); });
    await new Promise((resolve) => tcp.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const abstractName = `mpes-hostile-off-${process.pid}`;
    abstractServer = await startAbstractListener(PYTHON, abstractName);
    offWheels = tempDir('mpes-e2e-hostile-off-');
    const backend = `PORT = ${tcp.address().port}\nABSTRACT = ${JSON.stringify(abstractName)}\n${NO_NETWORK_BACKEND}`;
    writePackages(offWheels, [{ name: 'mpes_h_nonet', version: '1.0', sdist_backend: backend }]);
    cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
    // Not --offline: the installer has the index (the user's configuration) and --find-links.
    conn = await connect(['--network', 'off', '--find-links', offWheels, '--cache-dir', cache, '--log-level', 'info'],
      { env: userEnv(envWithUv(uv)) });
  });
  after(async () => {
    await conn?.client.close();
    tcp?.close();
    abstractServer?.kill('SIGKILL');
    if (cache) fs.rmSync(cache, { recursive: true, force: true });
    if (offWheels) fs.rmSync(offWheels, { recursive: true, force: true });
  });

  test('a build reaches nothing: not the host loopback, not outside, not UDP, not abstract sockets, nor its child', { skip }, async () => {
    const result = await conn.client.callTool(
      { name: 'execute_python', arguments: { script: 'print("ran")\n', dependencies: ['mpes_h_nonet'], timeout_seconds: 120 } },
      undefined, { timeout: 180000 },
    );
    const text = textOf(result);
    const m = text.match(/HOSTILE_RESULT ([^\n]*)/);
    assert.ok(m, text);
    for (const name of ['loopback', 'outside', 'udp', 'child']) {
      assert.match(m[1], new RegExp(`${name}=\\S*Permission_denied`), text);
    }
    assert.doesNotMatch(m[1], /abstract=reached/, text);
    assert.equal(arrivals, 0, 'the host loopback listener saw a connection');
  });

  test('a wheel from the index still installs (the front-end fetches) and runs with no network', { skip, timeout: 600000 }, async () => {
    const result = await conn.client.callTool(
      { name: 'execute_python', arguments: {
        script: 'import six, socket\nprint(six.__name__)\ntry:\n    socket.create_connection(("192.0.2.1", 443), timeout=3)\n    print("reached")\nexcept OSError as e:\n    print("no network")\n',
        dependencies: ['six'], timeout_seconds: 300 } },
      undefined, { timeout: 600000, resetTimeoutOnProgress: true },
    );
    const text = textOf(result);
    assert.equal(result.structuredContent?.stdout, 'six\nno network\n', text);
  });
});

// Nothing a build writes outlives it. A build backend (run by the installer for an sdist) tries to
// poison what later installs use: it rewrites every file of the installer's cache that holds the
// victim's code (the unpacked wheel a later install would copy), plants files in every directory
// of the cache and of the environment store, and writes into the server user's home; then fails.
// A later server process with the same --cache-dir must install the real victim.
const POISON_BACKEND = String.raw`
import os
out = {"rewritten": 0, "planted": 0}
for root in (CACHE, os.path.join(CACHE, "envs")):
    for d, dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            try:
                with open(p, "rb") as f:
                    data = f.read()
                if b"VICTIM_REAL" in data:
                    with open(p, "wb") as f:
                        f.write(data.replace(b"VICTIM_REAL", b"VICTIM_POISONED"))
                    out["rewritten"] += 1
            except OSError:
                pass
        try:
            with open(os.path.join(d, "mpes_h_planted.py"), "w") as f:
                f.write("planted")
            out["planted"] += 1
        except OSError:
            pass
try:
    with open(os.path.join(HOST_HOME, PLANTED), "w") as f:
        f.write("planted")
    out["home"] = "written"
except OSError as e:
    out["home"] = e.strerror.replace(" ", "_")
raise RuntimeError("HOSTILE_" + "RESULT " + " ".join("%s=%s" % kv for kv in out.items()))
`;

// Every file under `dir` whose name is `name`.
function filesNamed(dir, name) {
  const found = [];
  const walk = (d) => {
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === name) found.push(p);
    }
  };
  walk(dir);
  return found;
}

describe('a build cannot poison the cache, the environment store or the home', () => {
  const uv = findUv();
  for (const installer of ['pip', 'uv']) {
    const skip = installer === 'uv' && !uv ? `SKIPPED: ${uvUnavailable}` : false;
    test(`with ${installer}: a later server process installs the real package`, { skip, timeout: 600000 }, async () => {
      const poisonWheels = tempDir('mpes-e2e-hostile-poison-');
      const cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
      const planted = `.mpes-h-planted-${process.pid}-${installer}`;
      const backend = `CACHE = ${JSON.stringify(cache)}\nHOST_HOME = ${JSON.stringify(os.homedir())}\n` +
        `PLANTED = ${JSON.stringify(planted)}\n${POISON_BACKEND}`;
      writePackages(poisonWheels, [
        { name: 'mpes_h_victim', version: '1.0', files: { 'mpes_h_victim/__init__.py': 'VALUE = "VICTIM_REAL"\n' } },
        { name: 'mpes_h_other', version: '1.0', files: { 'mpes_h_other/__init__.py': 'X = 1\n' } },
        { name: 'mpes_h_poison', version: '1.0', sdist_backend: backend },
      ]);
      const args = ['--find-links', poisonWheels, '--offline', '--cache-dir', cache, '--log-level', 'info'];
      const start = () => (installer === 'pip'
        ? connect([...args, '--uv-path', '/nonexistent/uv'])
        : connect(args, { env: envWithUv(uv) }));
      const run = async (conn, dependencies) => {
        const result = await conn.client.callTool(
          { name: 'execute_python', arguments: { script: 'import mpes_h_victim\nprint(mpes_h_victim.VALUE)\n', dependencies, timeout_seconds: 240 } },
          undefined, { timeout: 300000 },
        );
        return { text: textOf(result), sc: result.structuredContent ?? {} };
      };
      let conn;
      try {
        conn = await start();
        // The victim, installed first: its wheel is in the installer's cache now.
        let r = await run(conn, ['mpes_h_victim']);
        assert.equal(r.sc.exit_code, 0, r.text);
        assert.match(r.text, /VICTIM_REAL/);
        // The poisoning build (in an environment with the victim, as a script could ask).
        r = await run(conn, ['mpes_h_victim', 'mpes_h_poison']);
        assert.equal(r.sc.end_reason, 'install_failed', r.text);
        // The backend ran (pip shows its exception; uv names the hook that failed).
        assert.match(r.text, /HOSTILE_RESULT|mpes_backend\.\w+` failed/, r.text);
        // What it wrote inside its sandbox (its own target, bwrap's mount points) is gone with it.
        await conn.client.close();
        conn = undefined;

        assert.deepEqual(filesNamed(cache, 'mpes_h_planted.py'), []);
        assert.equal(fs.existsSync(path.join(os.homedir(), planted)), false, 'nothing written into the home');
        // Another server process, the same cache: a new environment and the published one.
        conn = await start();
        r = await run(conn, ['mpes_h_victim', 'mpes_h_other']);
        assert.equal(r.sc.exit_code, 0, r.text);
        assert.match(r.text, /VICTIM_REAL/);
        r = await run(conn, ['mpes_h_victim']);
        assert.match(r.text, /VICTIM_REAL/);
      } finally {
        await conn?.client.close();
        fs.rmSync(path.join(os.homedir(), planted), { force: true });
        fs.rmSync(cache, { recursive: true, force: true });
        fs.rmSync(poisonWheels, { recursive: true, force: true });
      }
    });
  }
});

// A build cannot write the environment being built. The backend below, run by the installer for
// an sdist installed next to a wheel (the victim), tries synchronously to plant a .pth file in the
// environment's directory and in the sandbox's /tmp (where the front-end stages and caches the
// victim's files), then leaves a daemon that, for as long as the installer runs, rewrites every
// copy of the victim's module it finds (the environment, uv's unpacked wheels, pip's staging) and
// drops a .pth file into every directory it walks. Then it builds a wheel whose module says what the
// synchronous attempts achieved. The install must succeed with the real victim and nothing planted.
const WALL_BACKEND = String.raw`
import base64, hashlib, os, sys, time, zipfile
def _targets():
    envs = os.path.join(CACHE, "envs")
    return [os.path.join(envs, n, "site") for n in os.listdir(envs) if n.startswith(".tmp-")]
def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
def _attempts():
    out = []
    def attempt(name, path):
        try:
            _write(path, "import sys\n")
            out.append(name + "=written")
        except OSError as e:
            out.append(name + "=" + (e.strerror or type(e).__name__).replace(" ", "_"))
    for target in _targets():
        attempt("target", os.path.join(target, "mpes_h_planted.pth"))
    attempt("tmp", "/tmp/mpes_h_planted.pth")
    return " ".join(out)
def _daemon():
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    roots = _targets() + ["/tmp"]
    deadline = time.time() + 300
    while time.time() < deadline:
        for root in roots:
            for d, dirs, files in os.walk(root):
                dirs[:] = [n for n in dirs if n != ".mpes-interpreter"]
                if os.path.basename(d) == "mpes_h_victim" and "__init__.py" in files:
                    try:
                        _write(os.path.join(d, "__init__.py"), 'VALUE = "VICTIM_POISONED"\n')
                    except OSError:
                        pass
                try:
                    _write(os.path.join(d, "mpes_h_planted.pth"), "import sys\n")
                except OSError:
                    pass
        time.sleep(0.02)
    os._exit(0)
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    result = _attempts()
    _daemon()
    dist = "mpes_h_wall-1.0.dist-info"
    files = {"mpes_h_wall/__init__.py": "RESULT = %r\n" % result,
             dist + "/METADATA": "Metadata-Version: 2.1\nName: mpes_h_wall\nVersion: 1.0\n",
             dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: mpes-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ["%s,sha256=%s,%d" % (p, base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode(),
                                   len(t.encode())) for p, t in files.items()]
    files[dist + "/RECORD"] = "\n".join(record + [dist + "/RECORD,,"]) + "\n"
    name = "mpes_h_wall-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for p, t in files.items():
            z.writestr(p, t)
    return name
`;

describe('a build cannot write the environment being built, nor what the front-end stages for it', () => {
  const uv = findUv();
  for (const installer of ['pip', 'uv']) {
    const skip = installer === 'uv' && !uv ? `SKIPPED: ${uvUnavailable}` : false;
    test(`with ${installer}: the environment is the real one, nothing planted`, { skip, timeout: 600000 }, async () => {
      const wallWheels = tempDir('mpes-e2e-hostile-wall-');
      const cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
      writePackages(wallWheels, [
        { name: 'mpes_h_victim', version: '1.0', files: { 'mpes_h_victim/__init__.py': 'VALUE = "VICTIM_REAL"\n' } },
        { name: 'mpes_h_wall', version: '1.0', sdist_backend: `CACHE = ${JSON.stringify(cache)}\n${WALL_BACKEND}` },
      ]);
      const args = ['--find-links', wallWheels, '--offline', '--cache-dir', cache, '--log-level', 'info'];
      let conn;
      try {
        conn = installer === 'pip'
          ? await connect([...args, '--uv-path', '/nonexistent/uv'])
          : await connect(args, { env: envWithUv(uv) });
        const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
        const installerLine = env.structuredContent?.engine?.environments?.installer ?? '';
        const confined = /builds from source: landlock ABI \d+: each build writes only its own directories/
          .test(installerLine);
        // Where the kernel has Landlock (runs are scoped by it), builds are confined by it too.
        if (/^landlock ABI/.test(env.structuredContent?.engine?.run_scoping ?? '')) assert.ok(confined, installerLine);
        const result = await conn.client.callTool(
          { name: 'execute_python', arguments: {
            script: 'import mpes_h_victim, mpes_h_wall\nprint(mpes_h_victim.VALUE)\nprint(mpes_h_wall.RESULT)\n',
            dependencies: ['mpes_h_victim', 'mpes_h_wall'], timeout_seconds: 240 } },
          undefined, { timeout: 300000 },
        );
        const text = textOf(result);
        if (!confined) {
          // Without Landlock the build is not confined: the RECORD check must still refuse a
          // poisoned environment, or the daemon lost the race.
          assert.ok(result.structuredContent?.end_reason === 'install_failed' || /VICTIM_REAL/.test(text), text);
          return;
        }
        assert.equal(result.structuredContent?.exit_code, 0, text);
        const [value, attempts] = result.structuredContent.stdout.trim().split('\n');
        assert.equal(value, 'VICTIM_REAL', text);
        assert.match(attempts, /^target=Permission_denied tmp=Permission_denied$/, text);
        assert.deepEqual(filesNamed(path.join(cache, 'envs'), 'mpes_h_planted.pth'), []);
        // The published environment, as a later run gets it.
        const again = await conn.client.callTool(
          { name: 'execute_python', arguments: { script: 'import mpes_h_victim\nprint(mpes_h_victim.VALUE)\n',
            dependencies: ['mpes_h_victim', 'mpes_h_wall'], timeout_seconds: 60 } },
          undefined, { timeout: 120000 },
        );
        assert.equal(again.structuredContent?.stdout, 'VICTIM_REAL\n', textOf(again));
      } finally {
        await conn?.client.close();
        fs.rmSync(cache, { recursive: true, force: true });
        fs.rmSync(wallWheels, { recursive: true, force: true });
      }
    });
  }
});

// Verified before published: a wheel changed after it was built (a file no longer what its RECORD
// says; neither uv nor pip checks) is refused, naming the distribution and the file, and no
// environment is left.
describe('an environment whose files do not match their RECORD is not published', () => {
  const uv = findUv();
  for (const installer of ['pip', 'uv']) {
    const skip = installer === 'uv' && !uv ? `SKIPPED: ${uvUnavailable}` : false;
    test(`with ${installer}: install_failed names the distribution and the file`, { skip, timeout: 300000 }, async () => {
      const tamperedWheels = tempDir('mpes-e2e-hostile-tampered-');
      const cache = tempDir('mpes-e2e-hostile-cache-', path.join(os.homedir(), '.cache'));
      writePackages(tamperedWheels, [
        { name: 'mpes_h_tampered', version: '1.0', files: { 'mpes_h_tampered/__init__.py': 'VALUE = "REAL"\n' },
          tampered: { 'mpes_h_tampered/__init__.py': 'VALUE = "TAMPERED"\n' } },
      ]);
      const args = ['--find-links', tamperedWheels, '--offline', '--cache-dir', cache, '--log-level', 'info'];
      let conn;
      try {
        conn = installer === 'pip'
          ? await connect([...args, '--uv-path', '/nonexistent/uv'])
          : await connect(args, { env: envWithUv(uv) });
        const result = await conn.client.callTool(
          { name: 'execute_python', arguments: { script: 'import mpes_h_tampered\nprint(mpes_h_tampered.VALUE)\n',
            dependencies: ['mpes_h_tampered'], timeout_seconds: 120 } },
          undefined, { timeout: 180000 },
        );
        const text = textOf(result);
        assert.equal(result.structuredContent?.end_reason, 'install_failed', text);
        assert.match(text, /mpes_h_tampered-1\.0\.dist-info: mpes_h_tampered\/__init__\.py: its sha256 digest differs from RECORD's/, text);
        assert.doesNotMatch(text, /TAMPERED/, text);
        const envs = fs.readdirSync(path.join(cache, 'envs'));
        assert.deepEqual(envs.filter((n) => !n.startsWith('.')), [], 'no environment was published');
        assert.deepEqual(buildDirs(cache), [], 'no half-built environment stays');
      } finally {
        await conn?.client.close();
        fs.rmSync(cache, { recursive: true, force: true });
        fs.rmSync(tamperedWheels, { recursive: true, force: true });
      }
    });
  }
});
