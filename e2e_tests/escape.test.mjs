// The escape suite: attacks a script might try, run through the real server (native backend)
// with the SDK client. Each must fail inside and leave the server healthy and the host unchanged.
// Every attack has a positive control that runs the same probe outside the sandbox (Debian's
// /usr/bin/python3 directly, against temporary paths, or the server with --network on), so no
// test passes because a probe or the sandbox failed to start: each inside probe must print its
// PROBE line from a run whose structuredContent says it ran sandboxed.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { backend, connect, serverPath, textOf } from './lib/client.mjs';
import { startAbstractListener } from './lib/abstract_socket.mjs';
import { canUserMode } from './lib/user_network.mjs';

const HOST_PYTHON = '/usr/bin/python3';
// On the docker backend (MPES_SANDBOX_BACKEND=docker) every attack runs the same, inside the
// zygote's container. The checks the container itself makes impossible, whose controls are
// therefore adapted there:
//  - the host's loopback is out of reach even with --network on (the container has a network
//    namespace of its own, docker's bridge): the --network on control checks that the run has
//    the bridge's interface instead of reaching a host listener;
//  - the zygote is not a descendant of the server (docker's daemon starts it): the pid namespace
//    control looks at the server's containers' processes instead.
const DOCKER = backend === 'docker';
const rand = () => crypto.randomBytes(6).toString('hex');
const isRoot = process.getuid() === 0;
// Limits small enough to hit quickly, stated here so the tests can check the numbers.
const LIMITS = { memoryMb: 256, processes: 64, tmpfsMb: 32 };
const LIMIT_FLAGS = [
  '--memory-limit-mb', String(LIMITS.memoryMb),
  '--max-processes', String(LIMITS.processes),
  '--tmpfs-size-mb', String(LIMITS.tmpfsMb),
];

// Shared Python helpers for every probe: report() prints the one line the test parses.
const PRELUDE = String.raw`
import os, sys, json, ctypes, errno
def report(**kw):
    print('PROBE ' + json.dumps(kw), flush=True)
def attempt(fn):
    try:
        return {'ok': True, 'value': fn()}
    except OSError as e:
        return {'ok': False, 'errno': e.errno, 'error': type(e).__name__ + ': ' + str(e)}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def syscall(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
def detach_stdio():
    # A process meant to outlive the prober must not hold its output pipes open.
    null = os.open('/dev/null', os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
def in_child(fn):
    # Runs fn in a forked child so a successful attack (e.g. unshare) cannot change the prober.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = fn()
        except BaseException as e:
            out = 'exception: %r' % (e,)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b''
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else None
`;

function parseProbe(stdout) {
  const lines = (stdout ?? '').split('\n').filter((l) => l.startsWith('PROBE '));
  return lines.length ? JSON.parse(lines[lines.length - 1].slice(6)) : null;
}

async function inside(client, body, { timeout = 60, expectProbe = true } = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script: PRELUDE + body, timeout_seconds: timeout } },
    undefined,
    { timeout: (timeout + 60) * 1000 },
  );
  const sc = result.structuredContent ?? {};
  const text = textOf(result);
  assert.notEqual(result.isError, true, `the run failed as a service error: ${text}`);
  assert.equal(sc.sandbox, backend, `the run was not sandboxed (${backend}): ${text}`);
  const probe = parseProbe(sc.stdout);
  if (expectProbe) assert.ok(probe, `the probe did not report (did it start?):\n${text}`);
  return { probe, sc, text };
}

// Runs the probe with the host's python, outside any sandbox, in a fresh temporary directory
// removed afterwards. Asynchronous, so host listeners in this process keep serving meanwhile.
async function outside(body) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-control-'));
  try {
    const child = spawn(HOST_PYTHON, ['-c', PRELUDE + body], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120000);
    await new Promise((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    const probe = parseProbe(stdout);
    assert.ok(probe, `control probe did not report: ${stdout}\n${stderr}`);
    return probe;
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

// Host processes whose command line contains `tag`.
function hostProcessesWith(tag) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(tag)) found.push(Number(entry));
    } catch { /* exited meanwhile */ }
  }
  return found;
}

// Every live descendant of `root` on the host.
// Docker backend: the processes of the server's zygote containers (named mpes-<server pid>-N).
function containerPidsOf(serverPid) {
  if (!DOCKER) return [];
  const names = execFileSync('docker', ['ps', '--filter', `name=^mpes-${serverPid}-`, '--format', '{{.Names}}'],
    { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  const pids = [];
  for (const name of names) {
    const pid = Number(execFileSync('docker', ['inspect', '--format', '{{.State.Pid}}', name], { encoding: 'utf8' }).trim());
    if (pid > 0) pids.push(pid, ...descendantsOf(pid));
  }
  return pids;
}

function descendantsOf(root) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch { /* exited meanwhile */ }
  }
  const out = [];
  const stack = [root];
  while (stack.length) {
    for (const c of children.get(stack.pop()) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

async function waitUntil(predicate, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return predicate();
}

async function assertHealthy(client) {
  const result = await client.callTool({
    name: 'execute_python',
    arguments: { script: 'print(6 * 7)' },
  });
  assert.notEqual(result.isError, true, textOf(result));
  assert.equal(result.structuredContent?.stdout, '42\n', textOf(result));
}

// A long-lived host process with a unique tag in its command line.
function startMarker(tag) {
  const child = spawn('/bin/sh', ['-c', 'while :; do sleep 1; done', tag], {
    stdio: 'ignore',
    detached: true,
  });
  return child;
}

describe('escape suite (native sandbox)', { timeout: 900000 }, () => {
  let server;
  let client;
  const tag = `mpes-escape-${rand()}`;
  const planted = [];
  let marker;

  before(async () => {
    server = await connect(LIMIT_FLAGS);
    client = server.client;
    marker = startMarker(`${tag}-marker`);
    assert.ok(await waitUntil(() => hostProcessesWith(`${tag}-marker`).length > 0));
  });

  after(async () => {
    if (marker) process.kill(-marker.pid, 'SIGKILL');
    for (const p of planted) fs.rmSync(p, { force: true, recursive: true });
    await client?.close();
  });

  test('cannot read /etc/shadow, the host home or a planted secret', async () => {
    const secret = rand();
    const homeSecret = path.join(os.homedir(), `.${tag}-secret`);
    const varSecret = `/var/tmp/${tag}-secret`;
    for (const p of [homeSecret, varSecret]) {
      fs.writeFileSync(p, secret, { mode: 0o644 });
      planted.push(p);
    }
    const probe = (paths) => `
out = {p: attempt(lambda p=p: open(p).read()) for p in ${JSON.stringify(paths)}}
home = attempt(lambda: os.listdir(${JSON.stringify(os.homedir())}))
report(reads=out, home=home)
`;
    // Control: the probe reads the planted secrets (and, as root, /etc/shadow) outside.
    const control = await outside(probe([homeSecret, varSecret, '/etc/shadow']));
    assert.equal(control.reads[homeSecret].value, secret);
    assert.equal(control.reads[varSecret].value, secret);
    if (isRoot) assert.equal(control.reads['/etc/shadow'].ok, true);
    assert.ok(control.home.value.includes(path.basename(homeSecret)));

    const { probe: p } = await inside(client, probe([homeSecret, varSecret, '/etc/shadow']));
    for (const [file, r] of Object.entries(p.reads)) {
      assert.equal(r.ok, false, `${file} was readable inside: ${JSON.stringify(r)}`);
    }
    if (p.home.ok) assert.ok(!p.home.value.includes(path.basename(homeSecret)));
  });

  test('cannot write to /usr, /etc, the host home, /var or /opt', async () => {
    const name = `${tag}-written`;
    const dirs = ['/usr', '/usr/lib', '/etc', os.homedir(), '/var', '/var/tmp', '/opt', '/'];
    const probe = (targets) => `
def write(d):
    with open(os.path.join(d, ${JSON.stringify(name)}), 'w') as f:
        f.write('escaped')
    return True
report(writes={d: attempt(lambda d=d: write(d)) for d in ${JSON.stringify(targets)}})
`;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-'));
    planted.push(tmp);
    const control = await outside(probe([tmp]));
    assert.equal(control.writes[tmp].ok, true, 'control: the probe writes into a temp dir');

    const { probe: p } = await inside(client, probe(dirs));
    for (const d of dirs) {
      assert.equal(p.writes[d].ok, false, `wrote into ${d} inside`);
      assert.equal(fs.existsSync(path.join(d, name)), false, `${d}/${name} appeared on the host`);
    }
  });

  test('no capabilities, no_new_privs, seccomp filter, not root', async () => {
    const probe = `
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
report(status={k: v.strip() for k, v in status.items()}, uid=os.getuid(), euid=os.geteuid(), gid=os.getgid())
`;
    const control = await outside(probe);
    assert.equal(control.status.NoNewPrivs, '0', 'control: the probe reads real values');
    if (isRoot) assert.notEqual(control.status.CapEff, '0000000000000000');

    const { probe: p } = await inside(client, probe);
    for (const key of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
      assert.equal(p.status[key], '0000000000000000', `${key} inside`);
    }
    assert.equal(p.status.NoNewPrivs, '1');
    assert.equal(p.status.Seccomp, '2');
    assert.notEqual(p.uid, 0, 'the script runs as root inside its namespace');
    assert.notEqual(p.euid, 0);
    assert.notEqual(p.gid, 0);
  });

  test('unshare, mount, ptrace, bpf, userfaultfd, io_uring, CLONE_PARENT, TIOCSTI, AIO and SHM_LOCK are denied', async () => {
    // x86_64 syscall numbers; each attack in its own forked child.
    const probe = `
import struct
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
def do_unshare():
    return syscall(272, CLONE_NEWUSER)
def do_mount():
    syscall(272, CLONE_NEWUSER | CLONE_NEWNS)  # as an unprivileged user would first
    os.makedirs('mnt', exist_ok=True)
    return syscall(165, b'none', os.path.abspath('mnt').encode(), b'tmpfs', 0, 0)
def do_ptrace():
    return syscall(101, 0, 0, 0, 0)  # PTRACE_TRACEME
def do_bpf():
    attr = ctypes.create_string_buffer(struct.pack('IIII', 2, 4, 4, 1) + bytes(112))
    return syscall(321, 0, attr, 128)  # BPF_MAP_CREATE, an array map
def do_userfaultfd():
    return syscall(323, 0o2000000 | 1)  # O_CLOEXEC | UFFD_USER_MODE_ONLY
def do_io_uring():
    params = ctypes.create_string_buffer(120)
    return syscall(425, 1, params)
def do_clone_parent():
    # CLONE_PARENT | SIGCHLD: a sibling, out of reach of what ends a session step's processes.
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x8000 | 17), *[ctypes.c_long(0)] * 4)
    if r == 0:
        os._exit(0)
    return 0 if r > 0 else ctypes.get_errno()
def do_tiocsti():
    c = ctypes.create_string_buffer(b'x')
    return syscall(16, 0, 0x5412, c)
def do_tiocsti_high():
    c = ctypes.create_string_buffer(b'x')
    return syscall(16, 0, (1 << 32) | 0x5412, c)
def do_io_setup():
    # Linux AIO: a host-wide pool of events (fs.aio-max-nr) a run could take whole.
    ctx = ctypes.c_ulong(0)
    r = syscall(206, 1, ctypes.byref(ctx))
    if r == 0:
        syscall(207, ctx.value)
    return r
def do_shm_lock():
    # SysV SHM_LOCK: the host user's locked memory, shared with the host's processes of that user.
    libc.shmget.restype = ctypes.c_int
    shm = libc.shmget(0, 4096, 0o1000 | 0o600)
    if shm < 0:
        return 1000 + ctypes.get_errno()
    r = syscall(31, shm, 11, 0)
    libc.shmctl(shm, 0, None)  # IPC_RMID
    return r
names = ['unshare', 'mount', 'ptrace', 'bpf', 'userfaultfd', 'io_uring', 'clone_parent', 'tiocsti', 'tiocsti_high',
         'io_setup', 'shm_lock']
report(errnos={n: in_child(globals()['do_' + n]) for n in names})
`;
    const control = (await outside(probe)).errnos;
    const inner = (await inside(client, probe)).probe.errnos;
    const EPERM = 1;
    const ENOSYS = 38;  // AIO: as on a kernel built without it
    for (const [name, errnoInside] of Object.entries(inner)) {
      assert.equal(errnoInside, name === 'io_setup' ? ENOSYS : EPERM, `${name} inside gave errno ${errnoInside}`);
    }
    // Controls: outside, the same calls succeed (errno 0) or fail for another reason (TIOCSTI on
    // a pipe: ENOTTY). bpf needs root outside (unprivileged_bpf_disabled).
    for (const name of ['unshare', 'mount', 'ptrace', 'userfaultfd', 'io_uring', 'clone_parent', 'io_setup', 'shm_lock']) {
      assert.equal(control[name], 0, `control: ${name} works outside (errno ${control[name]})`);
    }
    assert.equal(control.tiocsti, 25, 'control: TIOCSTI on a non-tty is ENOTTY outside');
    assert.equal(control.tiocsti_high, 25);
    if (isRoot) assert.equal(control.bpf, 0, 'control: bpf map creation works as root');
  });

  test('cannot see or signal host processes or the zygote; kill(-1) harms nothing', async () => {
    const markerTag = `${tag}-marker`;
    const [markerPid] = hostProcessesWith(markerTag);
    assert.ok(markerPid, 'the host marker runs');
    const serverPid = server.transport.pid;
    const probe = `
seen = {}
for e in os.listdir('/proc'):
    if e.isdigit() and int(e) != os.getpid():
        try:
            seen[e] = open('/proc/%s/cmdline' % e, 'rb').read().replace(b'\\0', b' ').decode()
        except OSError:
            pass
marker = [c for c in seen.values() if ${JSON.stringify(markerTag)} in c]
server = [c for c in seen.values() if ${JSON.stringify(serverPath)} in c]
report(marker=marker, server=server, count=len(seen) + 1, pidns=os.readlink('/proc/self/ns/pid'),
       signal=attempt(lambda: os.kill(${markerPid}, 0)),
       signal_server=attempt(lambda: os.kill(${serverPid}, 0)))
`;
    const control = await outside(probe);
    assert.equal(control.marker.length, 1, 'control: the probe finds the host marker');
    assert.ok(control.server.length >= 1, 'control: the probe finds the server');
    assert.equal(control.signal.ok, true, 'control: the probe can signal the marker');

    const { probe: p } = await inside(client, probe);
    assert.deepEqual(p.marker, []);
    assert.deepEqual(p.server, []);
    assert.equal(p.signal.ok, false);
    assert.equal(p.signal_server.ok, false);
    // Its own pid namespace: just the run's init and the script.
    assert.ok(p.count <= 3, `the run sees ${p.count} processes`);
    // Not the pid namespace of the host, nor of the zygote or anything else the server runs.
    // The answer comes from the init's record of the script's end, so the run's own init may
    // still be tearing its namespace down for a moment: that namespace must be gone within 2 s
    // (the zygote's, or any other process's, would stay).
    let namespaces;
    for (let attempt = 0; attempt < 20; attempt++) {
      namespaces = new Set([fs.readlinkSync('/proc/self/ns/pid')]);
      for (const pid of [...descendantsOf(serverPid), ...containerPidsOf(serverPid)]) {
        try { namespaces.add(fs.readlinkSync(`/proc/${pid}/ns/pid`)); } catch { /* exited */ }
      }
      if (!namespaces.has(p.pidns)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(namespaces.size >= 2, 'control: the zygote runs in a pid namespace of its own');
    assert.ok(!namespaces.has(p.pidns), `the run shares a pid namespace (${p.pidns})`);

    const killer = await inside(client, `
import signal
report(result=attempt(lambda: os.kill(-1, signal.SIGKILL)))
`);
    assert.ok(killer.probe, 'the script survived its own kill(-1)');
    assert.doesNotThrow(() => process.kill(markerPid, 0), 'the host marker survived kill(-1)');
    assert.equal(hostProcessesWith(markerTag).length, 1);
    await assertHealthy(client);
  });

  test('a fork bomb is bounded and leaves nothing behind', async () => {
    const bombTag = `${tag}-forkbomb`;
    const probe = (limit) => `
import time
n = 0
err = None
while n < ${limit}:
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        try:
            detach_stdio()
            os.execv('/bin/sh', ['/bin/sh', '-c', 'while :; do sleep 1; done', ${JSON.stringify(bombTag)}])
        finally:
            os._exit(1)
    n += 1
report(forked=n, errno=err)
`;
    // Control: outside, the probe forks tagged processes that the host scan finds.
    const control = await outside(probe(5));
    assert.equal(control.forked, 5);
    assert.ok(await waitUntil(() => hostProcessesWith(bombTag).length >= 5));
    for (const pid of hostProcessesWith(bombTag)) process.kill(pid, 'SIGKILL');
    assert.ok(await waitUntil(() => hostProcessesWith(bombTag).length === 0));

    const { probe: p, sc } = await inside(client, probe(100000), { timeout: 20 });
    assert.ok(p.forked < LIMITS.processes, `forked ${p.forked} processes`);
    assert.equal(p.errno, 11, 'fork fails with EAGAIN at the limit');
    assert.ok(['exit', 'process_limit'].includes(sc.end_reason), sc.end_reason);
    assert.ok(await waitUntil(() => hostProcessesWith(bombTag).length === 0),
      `fork bomb survivors: ${hostProcessesWith(bombTag)}`);
    await assertHealthy(client);
  });

  test('a thread bomb is bounded', async () => {
    const probe = (limit) => `
import threading, time
n = 0
err = None
ev = threading.Event()
while n < ${limit}:
    try:
        threading.Thread(target=ev.wait, daemon=True).start()
    except RuntimeError as e:
        err = str(e)
        break
    n += 1
ev.set()
report(threads=n, error=err)
`;
    const control = await outside(probe(200));
    assert.equal(control.threads, 200, 'control: 200 threads start outside');
    const { probe: p } = await inside(client, probe(100000), { timeout: 30 });
    assert.ok(p.threads < LIMITS.processes, `started ${p.threads} threads`);
    assert.match(p.error ?? '', /can't start new thread/);
    await assertHealthy(client);
  });

  // Whether a cgroup counts the run's memory (else RLIMIT_DATA, per process, is the fallback).
  async function memoryCounted() {
    const env = await client.callTool({ name: 'check_environment', arguments: {} });
    return env.structuredContent.engine.cgroups.memory !== 'RLIMIT_DATA';
  }

  test('a 64 GiB bytearray fails, is reported truthfully, and the server stays healthy', async () => {
    const big = await inside(client, `
report(start=True)
x = bytearray(64 << 30)
report(allocated=True)
`);
    assert.equal(big.probe.start, true);
    assert.equal(big.probe.allocated, undefined);
    assert.match(big.sc.stderr, /MemoryError/);
    if (await memoryCounted()) {
      // No limit was reached: the host refused an allocation larger than it has. The cgroup
      // recorded no OOM kill, and a traceback is the script's word, not evidence.
      assert.equal(big.sc.end_reason, 'exit', big.text);
      assert.equal(big.sc.exit_code, 1);
    } else {
      // RLIMIT_DATA refused it, and that leaves no kernel counter: the script's own
      // MemoryError is the only trace, and it is used (README: Honest limits).
      assert.equal(big.sc.end_reason, 'memory_limit', big.text);
      assert.match(big.text, /--- end: memory_limit ---/);
    }
    await assertHealthy(client);
  });

  test('a forged MemoryError traceback is not a memory limit where a cgroup counts memory', async () => {
    const forged = await inside(client, `
report(start=True)
sys.stderr.write('Traceback (most recent call last):\\n  File "script.py", line 1, in <module>\\nMemoryError\\n')
sys.exit(1)
`);
    assert.equal(forged.sc.exit_code, 1);
    assert.equal(forged.sc.end_reason, (await memoryCounted()) ? 'exit' : 'memory_limit', forged.text);
  });

  test('allocating and touching past the limit (bytearray, numpy) is a memory_limit', async () => {
    const mb = LIMITS.memoryMb * 2;
    const probes = {
      bytearray: `report(start=True)\nx = bytearray(${mb} << 20)\nreport(allocated=len(x))\n`,
      numpy: `import numpy as np\nreport(start=True)\na = np.ones(${mb} << 17)\nreport(allocated=int(a.nbytes))\n`,
    };
    for (const [name, body] of Object.entries(probes)) {
      const control = await outside(body);
      assert.equal(control.allocated, mb << 20, `control: ${name} allocates ${mb} MiB outside`);
      const { probe: p, sc, text } = await inside(client, body);
      assert.equal(p.start, true);
      assert.equal(p.allocated, undefined, `${name}: allocated ${mb} MiB inside`);
      assert.equal(sc.end_reason, 'memory_limit', `${name}: ${text}`);
      await assertHealthy(client);
    }
  });

  test('filling /tmp, /dev/shm and the work dir stops at the tmpfs cap', async () => {
    const probe = (dirs) => `
def fill(d):
    total = 0
    chunk = b'x' * (1 << 20)
    try:
        with open(os.path.join(d, ${JSON.stringify(`${tag}-fill`)}), 'wb') as f:
            while total < (${LIMITS.tmpfsMb * 4} << 20):
                f.write(chunk)
                f.flush()
                total += len(chunk)
        return {'bytes': total, 'errno': None}
    except OSError as e:
        return {'bytes': total, 'errno': e.errno}
    finally:
        try:
            os.remove(os.path.join(d, ${JSON.stringify(`${tag}-fill`)}))
        except OSError:
            pass
report(fill={d: fill(d) for d in ${JSON.stringify(dirs)}})
`;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-'));
    planted.push(tmp);
    const control = await outside(probe([tmp]));
    assert.equal(control.fill[tmp].bytes, (LIMITS.tmpfsMb * 4) << 20, 'control: the writer fills');

    const { probe: p } = await inside(client, probe(['/tmp', '/dev/shm', '.']));
    for (const [d, r] of Object.entries(p.fill)) {
      assert.equal(r.errno, 28, `${d}: ENOSPC expected, got ${JSON.stringify(r)}`);
      assert.ok(r.bytes <= LIMITS.tmpfsMb << 20, `${d}: wrote ${r.bytes} bytes`);
    }
    assert.equal(fs.existsSync(`/dev/shm/${tag}-fill`), false);
    assert.equal(fs.existsSync(`/tmp/${tag}-fill`), false);
    await assertHealthy(client);
  });

  test('inode exhaustion stops at the tmpfs inode cap', async () => {
    const probe = (dir, limit) => `
n = 0
err = None
d = ${JSON.stringify(dir)}
while n < ${limit}:
    try:
        open(os.path.join(d, 'f%d' % n), 'w').close()
    except OSError as e:
        err = e.errno
        break
    n += 1
report(files=n, errno=err)
`;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-'));
    planted.push(tmp);
    const control = await outside(probe(tmp, 500));
    assert.equal(control.files, 500, 'control: the probe creates files');
    const { probe: p } = await inside(client, probe('/tmp', 10_000_000), { timeout: 60 });
    assert.equal(p.errno, 28, `ENOSPC expected: ${JSON.stringify(p)}`);
    // nr_inodes scales with the size cap: far below the 10 million the probe would create.
    assert.ok(p.files < 1_000_000, `created ${p.files} files`);
    await assertHealthy(client);
  });

  test('fd exhaustion stops at RLIMIT_NOFILE', async () => {
    const probe = (limit) => `
fds = []
err = None
while len(fds) < ${limit}:
    try:
        fds.append(os.open('/dev/null', os.O_RDONLY))
    except OSError as e:
        err = e.errno
        break
report(fds=len(fds), errno=err)
`;
    const control = await outside(probe(1000));
    assert.equal(control.fds, 1000, 'control: 1000 fds open outside');
    const { probe: p } = await inside(client, probe(1_000_000));
    assert.equal(p.errno, 24, 'EMFILE');
    assert.ok(p.fds < 1000, `opened ${p.fds} fds`);
    await assertHealthy(client);
  });

  // Every run maps to one host uid, whose inotify instances (128 by default) the kernel counts
  // across user namespaces: two sessions holding all they can get must leave a later run its own.
  test('sessions holding every inotify instance they can get leave other runs theirs', async () => {
    const grab = `
held = globals().setdefault('held', [])
libc.inotify_init1.restype = ctypes.c_int
while len(held) < 1000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    held.append(fd)
report(held=len(held), errno=ctypes.get_errno(), share=int(open('/proc/sys/user/max_inotify_instances').read()))
`;
    const control = await outside(grab.replace('1000', '20'));
    assert.equal(control.held, 20, 'control: 20 inotify instances outside');
    const sessions = [];
    try {
      for (let i = 0; i < 2; i += 1) {
        const created = await client.callTool({ name: 'create_session', arguments: {} });
        assert.notEqual(created.isError, true, textOf(created));
        sessions.push(created.structuredContent.session_id);
      }
      const shares = [];
      for (const id of sessions) {
        const r = await client.callTool({ name: 'execute_python', arguments: { script: PRELUDE + grab, session_id: id } });
        const p = parseProbe(r.structuredContent?.stdout);
        assert.ok(p, textOf(r));
        assert.equal(p.errno, 24, `the session's inotify_init1 ended with EMFILE: ${textOf(r)}`);
        assert.equal(p.held, p.share, `a session holds its share, no more: ${textOf(r)}`);
        assert.ok(p.share >= 1 && p.share < 64, `a share is a part of the host user's pool: ${p.share}`);
        shares.push(p.share);
      }
      // Meanwhile, a run gets its whole share too.
      const { probe: p } = await inside(client, grab);
      assert.equal(p.held, shares[0], `a run beside the sessions holds its share: ${JSON.stringify(p)}`);
    } finally {
      for (const id of sessions) await client.callTool({ name: 'close_session', arguments: { session_id: id } });
    }
    await assertHealthy(client);
  });

  // Queued signals are counted per host user too (RLIMIT_SIGPENDING at each user namespace):
  // a session holding every one it may queue must leave a later run its own.
  test('a session holding every signal it may queue leaves other runs theirs', async () => {
    const queue = (most) => `
import signal, threading, resource
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = globals().setdefault('queued', [0])
err = None
while queued[0] < ${most}:
    try:
        signal.pthread_kill(threading.get_ident(), signal.SIGRTMIN)
    except OSError as e:
        err = e.errno
        break
    queued[0] += 1
report(queued=queued[0], errno=err, limit=resource.getrlimit(resource.RLIMIT_SIGPENDING)[0])
`;
    const control = await outside(queue(200));
    assert.equal(control.queued, 200, 'control: 200 signals queued outside');
    const created = await client.callTool({ name: 'create_session', arguments: {} });
    assert.notEqual(created.isError, true, textOf(created));
    const id = created.structuredContent.session_id;
    try {
      const r = await client.callTool({ name: 'execute_python', arguments: { script: PRELUDE + queue(1_000_000), session_id: id } });
      const held = parseProbe(r.structuredContent?.stdout);
      assert.ok(held, textOf(r));
      assert.equal(held.errno, 11, `the session's queue ended with EAGAIN: ${textOf(r)}`);
      // (A signal the kernel queues to the same user meanwhile takes one place.)
      const near = (n) => n <= held.limit && n >= held.limit - 4;
      assert.ok(near(held.queued), `a session queues its share, no more: ${JSON.stringify(held)}`);
      assert.ok(held.limit < 50000, `a share is a part of the host user's pool: ${held.limit}`);
      const { probe: p } = await inside(client, queue(1_000_000));
      assert.ok(near(p.queued), `a run beside the session queues its whole share: ${JSON.stringify(p)}`);
    } finally {
      await client.callTool({ name: 'close_session', arguments: { session_id: id } });
    }
    await assertHealthy(client);
  });

  // The runner's end record lets the server answer a clean exit before the run's process is torn
  // down, and the server then kills what is left. A script can write that record itself and
  // go on: it is answered as if it had exited 0 (what it could have done) and stopped there.
  test('a script that writes its own end record, closes its streams and spins is answered and stopped', async () => {
    const script = `
import os
record = (0).to_bytes(4, 'little') + bytes(32)
os.write(5, len(record).to_bytes(4, 'little') + bytes((5,)) + record)
for fd in (1, 2, 5):
    os.close(fd)
while True:
    pass
`;
    const result = await server.client.callTool(
      { name: 'execute_python', arguments: { script, timeout_seconds: 5 } }, undefined, { timeout: 60000 });
    const sc = result.structuredContent ?? {};
    // Answered at the record (exit 0) where the run's cgroup counts it, else ended by a limit (its
    // deadline, or its CPU time where that limit comes first).
    assert.ok((sc.exit_code === 0 && sc.end_reason === 'exit') || ['timeout', 'cpu_limit'].includes(sc.end_reason),
      textOf(result));
    // Whichever: nothing of it still runs. The server's tree (and its containers) uses next to
    // no CPU in the second after the answer; a loop left spinning would use all of a core.
    const ticks = () => [...descendantsOf(server.transport.pid), ...containerPidsOf(server.transport.pid)]
      .reduce((sum, pid) => {
        try {
          const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
          return sum + Number(fields[11]) + Number(fields[12]);  // utime + stime, in clock ticks
        } catch {
          return sum;
        }
      }, 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = ticks();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const used = ticks() - before;
    assert.ok(used < 40, `the server's processes used ${used} ticks in 1 s after the answer: ${textOf(result)}`);
    await assertHealthy(server.client);
  });

  // Python that leaves a setsid double-fork daemon running, its command line tagged `daemonTag`.
  const spawnDaemon = (daemonTag) => `
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        detach_stdio()
        os.execv('/bin/sh', ['/bin/sh', '-c', 'while :; do sleep 1; done', ${JSON.stringify(daemonTag)}])
    os._exit(0)
os.wait()`;

  test('a setsid double-fork daemon does not outlive the run', async () => {
    const daemonTag = `${tag}-daemon`;
    const probe = `${spawnDaemon(daemonTag)}
report(spawned=True)
`;
    // Control: outside the daemon survives the prober, and the host scan sees it.
    await outside(probe);
    assert.ok(await waitUntil(() => hostProcessesWith(daemonTag).length === 1), 'control daemon');
    for (const pid of hostProcessesWith(daemonTag)) process.kill(pid, 'SIGKILL');
    assert.ok(await waitUntil(() => hostProcessesWith(daemonTag).length === 0));

    const { probe: p } = await inside(client, probe);
    assert.equal(p.spawned, true);
    assert.ok(await waitUntil(() => hostProcessesWith(daemonTag).length === 0, 3000),
      `daemon outlived the run: ${hostProcessesWith(daemonTag)}`);
  });

  test('a run that signals its init as the zygote does for a session still leaves nothing running', async () => {
    // The zygote's SIGUSR1 makes a session's init outlive step 0's process; from inside a run,
    // kill() shows the sender's pid and sigqueue cannot claim SI_USER, so the init ignores both.
    const daemonTag = `${tag}-usr1`;
    const probe = `
import ctypes, signal, struct
def attempt_kill():
    try:
        os.kill(1, signal.SIGUSR1)
        return 'sent'
    except OSError as e:
        return e.strerror
libc = ctypes.CDLL(None, use_errno=True)
def queue(code):
    # siginfo: signo, errno, code, (pad), si_pid 0, si_uid 0, the rest zero: 128 bytes
    info = struct.pack('iiii', signal.SIGUSR1, 0, code, 0) + struct.pack('iI', 0, 0) + bytes(104)
    ctypes.set_errno(0)
    r = libc.syscall(129, 1, signal.SIGUSR1, ctypes.create_string_buffer(info, 128))  # rt_sigqueueinfo
    return 'sent' if r == 0 else os.strerror(ctypes.get_errno())
killed = attempt_kill()
as_user = queue(0)
as_queue = queue(-1)
${spawnDaemon(daemonTag)}
report(spawned=True, killed=killed, as_user=as_user, as_queue=as_queue)
`;
    const { probe: p } = await inside(client, probe);
    assert.equal(p.spawned, true, JSON.stringify(p));
    assert.notEqual(p.as_user, 'sent', JSON.stringify(p));  // the kernel refuses a forged SI_USER
    assert.ok(await waitUntil(() => hostProcessesWith(daemonTag).length === 0, 3000),
      `daemon outlived the run after SIGUSR1 to its init (${JSON.stringify(p)}): ${hostProcessesWith(daemonTag)}`);
    await assertHealthy(client);
  });

  test('sys.path directories and installer caches cannot be written', async () => {
    const home = os.homedir();
    const caches = [
      path.join(home, '.cache', 'pip'),
      path.join(home, '.cache', 'uv'),
      path.join(process.env.XDG_CACHE_HOME ?? path.join(home, '.cache'), 'mcp-python-exec-sandbox'),
      '/root/.cache',
    ];
    const name = `${tag}-planted.py`;
    const probe = (extra) => `
import site
dirs = [p for p in sys.path if p and os.path.isdir(p) and os.path.abspath(p) != os.getcwd()]
dirs += [p for p in site.getsitepackages() if os.path.isdir(p)]
dirs += ${JSON.stringify(extra)}
def write(d):
    with open(os.path.join(d, ${JSON.stringify(name)}), 'w') as f:
        f.write('import os')
    os.remove(os.path.join(d, ${JSON.stringify(name)}))
    return True
report(dirs=dirs, writes={d: attempt(lambda d=d: write(d)) for d in dirs})
`;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-'));
    planted.push(tmp);
    const control = await outside(probe([tmp]));
    assert.equal(control.writes[tmp].ok, true, 'control: the writer works');
    assert.ok(control.dirs.length > 1, 'control: the probe finds sys.path directories');

    const { probe: p } = await inside(client, probe(caches));
    assert.ok(p.dirs.length > caches.length, 'inside: sys.path directories were probed');
    for (const [d, r] of Object.entries(p.writes)) {
      assert.equal(r.ok, false, `${d} writable inside`);
      assert.equal(fs.existsSync(path.join(d, name)), false);
    }
  });

  test('nothing left in /tmp, /dev/shm, cwd or any writable place reaches the next run', async () => {
    const name = `${tag}-leftover`;
    // Every directory a script might write to, whether or not it is writable in this sandbox.
    const dirs = ['/tmp', '/dev/shm', '.', '/', '/etc', '/home', '/run', '/var/tmp', '/usr/local'];
    const write = `
def leave(d):
    with open(os.path.join(d, ${JSON.stringify(name)}), 'w') as f:
        f.write('left')
    return True
wrote = {d: attempt(lambda d=d: leave(d))['ok'] for d in ${JSON.stringify(dirs)}}
report(wrote=wrote, present={d: os.path.exists(os.path.join(d, ${JSON.stringify(name)})) for d in wrote}, cwd=os.getcwd())
`;
    const check = `
report(present={d: os.path.exists(os.path.join(d, ${JSON.stringify(name)})) for d in ${JSON.stringify(dirs)}})
`;
    const first = await inside(client, write);
    // Control: within the run the files exist where writing worked (at least the scratch dirs),
    // so the check itself can see them.
    for (const d of ['/tmp', '/dev/shm', '.']) assert.equal(first.probe.wrote[d], true, d);
    for (const [d, wrote] of Object.entries(first.probe.wrote)) {
      assert.equal(first.probe.present[d], wrote, d);
    }
    const second = await inside(client, check);
    for (const [d, present] of Object.entries(second.probe.present)) {
      assert.equal(present, false, `${d}/${name} written by one run was there for the next`);
    }
    for (const d of dirs.filter((x) => x.startsWith('/'))) {
      assert.equal(fs.existsSync(path.join(d, name)), false, `${d}/${name} appeared on the host`);
    }
    assert.equal(fs.existsSync(path.join(first.probe.cwd, name)), false, 'the work dir was a host dir');
  });

  test('what scripts need still works inside: threads, subprocess, multiprocessing, numpy, pandas',
    async () => {
      // Under a main guard, as multiprocessing's spawn method requires: its children re-import
      // __main__ from the script's file (inside) and must not run the probe again.
      const probe = `
import threading, subprocess, multiprocessing, socket, tempfile
import numpy as np, pandas as pd
if __name__ == '__main__':
    out = []
    t = threading.Thread(target=lambda: out.append(1)); t.start(); t.join()
    sub = subprocess.run(['/bin/echo', 'hi'], capture_output=True).stdout.decode()
    with multiprocessing.get_context('fork').Pool(2) as pool:
        forked = pool.map(abs, [-1, -2, 3])
    # spawn starts a fresh interpreter that re-imports __main__ from its file: bounded wait.
    try:
        with multiprocessing.get_context('spawn').Pool(1) as pool:
            spawned = pool.map_async(abs, [-4]).get(timeout=20)
    except Exception as e:
        spawned = 'failed: %r' % (e,)
    with tempfile.NamedTemporaryFile() as f:
        f.write(b'x'); f.flush()
        tmp = os.path.getsize(f.name)
    report(thread=out, sub=sub, forked=forked, spawned=spawned, tmp=tmp,
           dot=float(np.arange(4.0) @ np.arange(4.0)), pandas=int(pd.DataFrame({'x': [1, 2, 3]}).x.sum()),
           resolve=len(socket.getaddrinfo('localhost', 80)) > 0)
`;
      const expected = {
        thread: [1], sub: 'hi\n', forked: [1, 2, 3], spawned: [4], tmp: 1, dot: 14, pandas: 6,
        resolve: true,
      };
      assert.deepEqual(await outside(probe), expected, 'control: the same script outside');
      const { probe: p } = await inside(client, probe);
      assert.deepEqual(p, expected);
    });

  test('the server is healthy and the host marker alive after every attack', async () => {
    await assertHealthy(client);
    assert.equal(hostProcessesWith(`${tag}-marker`).length, 1);
  });
});

describe('escape suite: network', { timeout: 300000 }, () => {
  let listener;
  let port;
  const connections = [];

  before(async () => {
    listener = net.createServer((socket) => {
      connections.push(socket);
      socket.end('hello from the host\n');
    });
    await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = listener.address().port;
  });

  after(() => {
    listener?.close();
  });

  const probe = () => `
import socket
def host_loopback():
    s = socket.create_connection(('127.0.0.1', ${port}), timeout=3)
    data = s.recv(100).decode()
    s.close()
    return data
def egress():
    s = socket.create_connection(('1.1.1.1', 53), timeout=3)
    s.close()
    return True
report(loopback=attempt(host_loopback), egress=attempt(egress),
       interfaces=[n for _, n in socket.if_nameindex()])
`;

  test('--network off: no host loopback, no egress, only lo', async () => {
    // Controls: outside, and inside with --network on, the probe reaches the host listener.
    const control = await outside(probe());
    assert.equal(control.loopback.value, 'hello from the host\n');
    assert.ok(control.interfaces.length > 1, 'control: the host has more than lo');

    const on = await connect([...LIMIT_FLAGS, '--network', 'on']);
    try {
      const { probe: p } = await inside(on.client, probe());
      // Docker's bridge, pasta's interface (root) or the host's (unprivileged): more than lo.
      // What --network on reaches is checked in 'escape suite: --network on' below.
      assert.ok(p.interfaces.length > 1, 'control: network on gives the run an interface beyond lo');
    } finally {
      await on.client.close();
    }

    const off = await connect([...LIMIT_FLAGS, '--network', 'off']);
    try {
      const { probe: p } = await inside(off.client, probe());
      assert.equal(p.loopback.ok, false, 'reached the host loopback with --network off');
      assert.equal(p.egress.ok, false, 'reached the internet with --network off');
      assert.deepEqual(p.interfaces, ['lo']);
      await assertHealthy(off.client);
    } finally {
      await off.client.close();
    }
  });
});

// --network on, native backend. With pasta installed, as root or where /dev/net/tun is open to the
// server's user (udev's default), each zygote has a network namespace of its own behind pasta: a
// run reaches the internet but not the host's loopback services, its own addresses, its abstract
// unix sockets, its socket table or metadata addresses; with nft too, each run has a namespace of
// its own routed through its zygote's, and runs cannot reach each other. Otherwise runs share the
// host's network, and check_environment must say so (and be right).
const onPath = (name, extra = []) =>
  [...(process.env.PATH ?? '/usr/bin:/bin').split(':'), ...extra].some((d) => d && fs.existsSync(path.join(d, name)));
const PASTA = onPath('pasta');
const CAN_USER_MODE = canUserMode();
const USER_MODE = CAN_USER_MODE && PASTA;
const PER_RUN = USER_MODE && onPath('nft', ['/usr/sbin', '/sbin']);


describe('escape suite: --network on', { skip: DOCKER && 'the docker backend has a network of its own (docker bridge)', timeout: 300000 }, () => {
  let listener;
  let port;
  let abstractServer;
  const abstractName = `mpes-escape-${process.pid}-${rand()}`;
  let conn;

  before(async () => {
    listener = net.createServer((socket) => socket.end('hello from the host\n'));
    await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = listener.address().port;
    abstractServer = await startAbstractListener(HOST_PYTHON, abstractName);
    conn = await connect([...LIMIT_FLAGS, '--network', 'on']);
  });

  after(async () => {
    await conn?.client.close();
    listener?.close();
    abstractServer?.kill('SIGKILL');
  });

  const probe = () => `
import socket
def host_loopback():
    s = socket.create_connection(('127.0.0.1', ${port}), timeout=3)
    data = s.recv(100).decode()
    s.close()
    return data
def host_abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(b'\\0' + ${JSON.stringify(abstractName)}.encode())
    data = s.recv(100).decode()
    s.close()
    return data
def tcp_table():
    with open('/proc/net/tcp') as f:
        return ':%04X ' % ${port} in f.read()
def metadata():
    socket.create_connection(('169.254.169.254', 80), timeout=3).close()
    return True
def internet():
    socket.create_connection(('pypi.org', 443), timeout=15).close()
    return True
report(loopback=attempt(host_loopback), abstract=attempt(host_abstract), tcp_table=tcp_table(),
       metadata=attempt(metadata), internet=attempt(internet),
       interfaces=[n for _, n in socket.if_nameindex()])
`;

  async function isolation() {
    const result = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const line = textOf(result).split('\n').find((l) => l.startsWith('Network isolation: '));
    assert.ok(line, textOf(result));
    assert.equal(result.structuredContent?.engine?.network_isolation, line.slice('Network isolation: '.length));
    return line;
  }

  // "Run scoping: landlock ABI N (abstract unix sockets, signals)" or "Run scoping: unavailable: why"
  // (sandbox/landlock.h): whether each run is a Landlock domain of its own.
  async function scoping() {
    const result = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const line = textOf(result).split('\n').find((l) => l.startsWith('Run scoping: '));
    assert.ok(line, textOf(result));
    assert.equal(result.structuredContent?.engine?.run_scoping, line.slice('Run scoping: '.length));
    assert.match(line, /^Run scoping: (landlock ABI \d+ \(abstract unix sockets, signals\)|unavailable: .+)$/);
    return { available: line.startsWith('Run scoping: landlock'), line };
  }

  test('controls: outside, the probe reaches the host listener, abstract socket and socket table', async () => {
    const p = await outside(probe());
    assert.equal(p.loopback.value, 'hello from the host\n');
    assert.equal(p.abstract.value, 'host abstract\n');
    assert.equal(p.tcp_table, true);
  });

  test(`${isRoot ? 'as root' : 'unprivileged, /dev/net/tun open'} with pasta: the internet, but not the host loopback, abstract sockets, socket table or metadata`,
    { skip: !USER_MODE && 'a user-mode network needs pasta installed, and the server root or /dev/net/tun open to it' }, async () => {
      assert.match(await isolation(), /^Network isolation: user-mode \(pasta\)/);
      const { probe: p, text } = await inside(conn.client, probe(), { timeout: 40 });
      assert.equal(p.loopback.ok, false, `reached the host loopback: ${text}`);
      assert.equal(p.abstract.ok, false, `reached a host abstract socket: ${text}`);
      assert.equal(p.tcp_table, false, `the host's listening socket is in /proc/net/tcp: ${text}`);
      assert.equal(p.metadata.ok, false, `reached a metadata address: ${text}`);
      assert.equal(p.internet.ok, true, `the internet is not reachable: ${text}`);
      assert.ok(p.interfaces.length > 1, 'pasta\'s interface beyond lo');
      // The zygote says it is in its own namespace, and whether its runs each have one.
      const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
      const zygotes = env.structuredContent?.engine?.zygotes ?? [];
      const expected = PER_RUN ? /^own namespace \(pasta\), a namespace per run$/ : /^own namespace \(pasta\), shared by its runs/;
      assert.ok(zygotes.length > 0 && zygotes.every((z) => expected.test(z.network ?? '')), JSON.stringify(zygotes));
      if (PER_RUN) assert.deepEqual(p.interfaces.sort(), ['eth0', 'lo'], `the run's own link and loopback: ${text}`);
      await assertHealthy(conn.client);
    });

  test('without a user-mode network the host network is reported, and it is the truth',
    { skip: USER_MODE && 'pasta can run here: runs have a user-mode network' }, async () => {
      const line = await isolation();
      assert.match(line, /^Network isolation: host network: /);
      assert.match(line, CAN_USER_MODE ? /pasta was not found/ : /needs the server to run as root, or \/dev\/net\/tun open to its user/);
      const { probe: p, text } = await inside(conn.client, probe(), { timeout: 40 });
      assert.equal(p.loopback.value, 'hello from the host\n', text);
      assert.equal(p.tcp_table, true, text);
      // The host's network namespace, but not its abstract sockets: the run is a Landlock domain
      // of its own (where the kernel scopes; else the report says so, and they are reachable).
      const { available, line: scoped } = await scoping();
      if (available) {
        assert.equal(p.abstract.ok, false, `reached a host abstract socket (${scoped}): ${text}`);
        assert.equal(p.abstract.errno, 1, `not refused by Landlock (EPERM): ${text}`);
      } else {
        assert.equal(p.abstract.value, 'host abstract\n', `${scoped}: ${text}`);
      }
    });

  test('a pasta that fails to start leaves its zygote on the host network, and says so',
    { skip: !CAN_USER_MODE && 'a user-mode network is only tried as root or with /dev/net/tun open' }, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-escape-pasta-'));
      fs.writeFileSync(path.join(dir, 'pasta'), '#!/bin/sh\necho "simulated pasta failure" >&2\nexit 1\n', { mode: 0o755 });
      const failing = await connect([...LIMIT_FLAGS, '--network', 'on'], { env: { PATH: `${dir}:${process.env.PATH}` } });
      try {
        const { probe: p, text } = await inside(failing.client, probe(), { timeout: 40 });
        assert.equal(p.loopback.value, 'hello from the host\n', `the zygote is on the host network: ${text}`);
        // The host's network namespace, but not its abstract sockets where each run is scoped.
        if ((await scoping()).available) assert.equal(p.abstract.ok, false, `reached a host abstract socket: ${text}`);
        const env = await failing.client.callTool({ name: 'check_environment', arguments: {} });
        const zygotes = env.structuredContent?.engine?.zygotes ?? [];
        assert.ok(zygotes.length > 0 && zygotes.every((z) => /^host network: .*simulated pasta failure/s.test(z.network ?? '')),
          JSON.stringify(zygotes));
        assert.match(failing.stderr(), /zygote shares the host's network/);
      } finally {
        await failing.client.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

  test('two concurrent runs cannot reach each other over abstract sockets (one namespace, Landlock)', {
    skip: PER_RUN && 'each run has a network namespace of its own (its abstract sockets with it): the next test',
  }, async (t) => {
    const { available, line } = await scoping();
    if (!available) {
      t.skip(`each run is not a Landlock domain here (${line})`);
      return;
    }
    const name = `mpes-escape-peer-${rand()}`;
    // The peer binds and waits; the prober waits until the peer's socket is in its own
    // /proc/net/unix (so both share a network namespace and the peer is listening: the control),
    // tries to connect, then binds "<name>-done", which the peer sees the same way and stops.
    const listed = `
def listed(n):
    with open('/proc/net/unix') as f:
        return any(l.split()[-1] == '@' + n for l in f.read().splitlines()[1:] if len(l.split()) > 7)
`;
    const peer = `
import socket, time
${listed}
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); u.bind(b'\\0${name}'); u.listen(4); u.settimeout(0.1)
accepted = False
end = time.time() + 20
while time.time() < end and not listed('${name}-done'):
    try:
        u.accept()[0].close(); accepted = True
    except OSError:
        pass
report(accepted=accepted, done=listed('${name}-done'))
`;
    const prober = `
import socket, time
${listed}
end = time.time() + 20
while time.time() < end and not listed('${name}'):
    time.sleep(0.05)
seen = listed('${name}')
def peer_abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(b'\\0${name}'); s.close()
    return True
abstract = attempt(peer_abstract)
d = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); d.bind(b'\\0${name}-done'); d.listen(1)
time.sleep(0.5)
report(seen=seen, abstract=abstract)
`;
    const [a, b] = await Promise.all([inside(conn.client, peer, { timeout: 40 }), inside(conn.client, prober, { timeout: 40 })]);
    assert.equal(b.probe.seen, true, `control: the peer's socket is not in the prober's /proc/net/unix: ${b.text}\n${a.text}`);
    assert.equal(a.probe.done, true, `control: the peer did not see the prober finish: ${a.text}`);
    assert.equal(b.probe.abstract.ok, false, `reached the other run's abstract socket: ${b.text}`);
    assert.equal(b.probe.abstract.errno, 1, `not refused by Landlock (EPERM): ${b.text}`);
    assert.equal(a.probe.accepted, false, a.text);
  });

  test("a script's own child processes still reach its abstract sockets (one domain per run)", async () => {
    const name = `mpes-escape-own-${rand()}`;
    const { probe: p, text } = await inside(conn.client, `
import socket, subprocess, sys
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); u.bind(b'\\0${name}'); u.listen(4)
def forked():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(b'\\0${name}'); s.close()
    return True
via_fork = in_child(lambda: attempt(forked))  # (connected in the backlog: no accept needed)
child = subprocess.run([sys.executable, '-c', '''
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(b"\\\\0${name}"); s.close()
'''], capture_output=True, text=True, timeout=30)
report(fork=via_fork, exec_rc=child.returncode, exec_err=child.stderr[-500:])
`, { timeout: 40 });
    assert.equal(p.fork.ok, true, text);
    assert.equal(p.exec_rc, 0, text);
  });

  // Two runs of one zygote at the same time. The listener binds TCP and UDP on all its addresses
  // and an abstract unix socket (its own loopback, address and socket reach them: the controls)
  // and counts what arrives for 12 s; meanwhile the prober tries loopback and every address next to its own link's (the
  // runs' links are consecutive /30s, so the listener's is among them, whichever spare each run
  // took), all at once, TCP and UDP.
  test('two concurrent runs reach each other neither over loopback nor by address (TCP, UDP) nor abstract sockets', {
    skip: !PER_RUN && 'runs have a namespace of their own only with pasta and nft (and root or an open /dev/net/tun)',
  }, async () => {
    const port = 20000 + crypto.randomInt(30000);
    const abstract = `mpes-escape-peer-${rand()}`;
    const ownAddress = `
import socket, fcntl, struct
def own_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack('256s', b'eth0'))[20:24])
`;
    const listener = `${ownAddress}
import time
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(('0.0.0.0', ${port})); t.listen(64)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('0.0.0.0', ${port}))
x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); x.bind(b'\\0${abstract}'); x.listen(8)
y = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); y.connect(b'\\0${abstract}'); x.accept()[0].close(); y.close()
me = own_address()
for host in ('127.0.0.1', me):
    socket.create_connection((host, ${port}), timeout=3).close(); t.accept()[0].close()
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'self', (host, ${port})); u.recv(100)
t.settimeout(0.1); u.settimeout(0.1); x.settimeout(0.05)
accepted = datagrams = 0
end = time.time() + 12
while time.time() < end:
    try:
        t.accept()[0].close(); accepted += 1
    except OSError:
        pass
    try:
        u.recv(100); datagrams += 1
    except OSError:
        pass
    try:
        x.accept()[0].close(); accepted += 1
    except OSError:
        pass
report(address=me, controls=True, accepted=accepted, datagrams=datagrams)
`;
    const prober = `${ownAddress}
import errno, select, time
me = own_address()
a, b, c, d = map(int, me.split('.'))
targets = ['127.0.0.1'] + ['%d.%d.%d.%d' % (a, b, c, x) for x in range(max(1, d - 24), min(255, d + 25)) if x != d]
# All at once from one thread (non-blocking connects; a process limit may count every process
# and thread of the server's user where it has no cgroup): a 3 s wait for them all.
results, pending = {}, {}
for host in targets:
    s = socket.socket(); s.setblocking(False)
    e = s.connect_ex((host, ${port}))
    if e in (0, errno.EINPROGRESS): pending[s] = host
    else: results[host] = errno.errorcode.get(e, str(e)); s.close()
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'peer', (host, ${port}))
    except OSError:
        pass
end = time.time() + 3
while pending and time.time() < end:
    _, ready, _ = select.select([], list(pending), [], max(0.0, end - time.time()))
    for s in ready:
        e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        results[pending.pop(s)] = 'reached' if e == 0 else errno.errorcode.get(e, str(e)); s.close()
for s, host in pending.items():
    results[host] = 'timed out'; s.close()
def peer_abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(b'\\0${abstract}'); s.close()
    return True
report(address=me, reached=sorted(h for h, r in results.items() if r == 'reached'), tried=len(results),
       abstract=attempt(peer_abstract))
`;
    const listening = inside(conn.client, listener, { timeout: 40 });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const { probe: p, text: proberText } = await inside(conn.client, prober, { timeout: 40 });
    const { probe: l, text } = await listening;
    assert.equal(l.controls, true, `the listener's own loopback and address must reach it: ${text}`);
    assert.notEqual(p.address, l.address, 'two runs, two links');
    const [la, lb, lc, ld] = l.address.split('.').map(Number);
    const [pa, pb, pc, pd] = p.address.split('.').map(Number);
    assert.ok(la === pa && lb === pb && lc === pc && Math.abs(ld - pd) <= 24,
      `the listener's address ${l.address} is among the prober's targets (${p.address}±24)`);
    assert.deepEqual(p.reached, [], proberText);
    assert.equal(p.abstract.ok, false, `reached the other run's abstract socket: ${proberText}`);
    assert.equal(l.accepted, 0, `another run connected to it: ${text}`);
    assert.equal(l.datagrams, 0, `another run's datagram arrived: ${text}`);
  });

  // An address of the host's other than loopback: as root, one added for the test (as docker0's
  // 172.17.0.1 or a second interface would be); unprivileged, one the host has.
  const existingAddress = () => Object.values(os.networkInterfaces()).flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  test('a host service on another host address is out of reach (closed routes)', {
    skip: !USER_MODE ? 'needs a user-mode network (pasta, and root or /dev/net/tun open)'
      : !isRoot && !existingAddress() && 'no host address but loopback, and no root to add one',
  }, async () => {
    // A service bound to all addresses; a server started after the address is there.
    const extra = isRoot ? `198.51.100.${1 + crypto.randomInt(250)}` : existingAddress();
    if (isRoot) execFileSync('ip', ['addr', 'add', `${extra}/32`, 'dev', 'lo']);
    const service = net.createServer((socket) => socket.end('hello from the host\n'));
    await new Promise((resolve) => service.listen(0, '0.0.0.0', resolve));
    const servicePort = service.address().port;
    const fresh = await connect([...LIMIT_FLAGS, '--network', 'on']);
    try {
      const body = `
import socket
def host_service():
    s = socket.create_connection(('${extra}', ${servicePort}), timeout=3)
    data = s.recv(100).decode(); s.close(); return data
report(service=attempt(host_service))
`;
      assert.equal((await outside(body)).service.value, 'hello from the host\n', 'control: the host service answers');
      const { probe: p, text } = await inside(fresh.client, body, { timeout: 30 });
      assert.equal(p.service.ok, false, `reached the host service on ${extra}: ${text}`);
    } finally {
      await fresh.client.close();
      service.close();
      if (isRoot) execFileSync('ip', ['addr', 'del', `${extra}/32`, 'dev', 'lo']);
    }
  });
});

describe('escape suite: CPU limit', { timeout: 120000 }, () => {
  test('--cpu-limit-seconds ends a busy loop as cpu_limit', async () => {
    const probe = `
import time
report(start=True)
while True:
    pass
`;
    const limited = await connect([...LIMIT_FLAGS, '--cpu-limit-seconds', '1']);
    try {
      const { probe: p, sc, text } = await inside(limited.client, probe, { timeout: 30 });
      assert.equal(p.start, true);
      assert.equal(sc.timed_out, false, text);
      assert.equal(sc.end_reason, 'cpu_limit', text);
      assert.match(text, /--- end: cpu_limit ---/);
      await assertHealthy(limited.client);
    } finally {
      await limited.client.close();
    }
  });
});
