// The docker backend end to end (MPES_SANDBOX_BACKEND=docker; scripts/test.sh sets it once the
// daemon and the image are there): the Python server's own docker scenarios, the containers the
// server owns (labelled, removed at exit, leftovers of a crashed server removed at start, a dead
// one replaced with its run reported as a sandbox failure), and the refusals when docker cannot
// give the sandbox (fail closed, with the fix).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { connect, textOf } from './lib/client.mjs';

const OWNER_LABEL = 'io.github.mcp-python-exec-sandbox.owner';
const IMAGE = process.env.MPES_DOCKER_IMAGE ?? 'mcp-python-exec-sandbox:bookworm';
const enabled = process.env.MPES_SANDBOX_BACKEND === 'docker';
const skip = enabled ? false : 'set MPES_SANDBOX_BACKEND=docker (a running daemon and the image) to run';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const docker = (...args) => execFileSync('docker', args, { encoding: 'utf8' }).trim();

// An owner as a server writes it into its directories ("<boot>:<pid>:<start> <pid namespace>"),
// naming a process that has exited.
function goneOwner() {
  const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const pid = JSON.parse(execFileSync('/bin/sh', ['-c', 'echo $$'], { encoding: 'utf8' }));
  return `${boot}:${pid}:1 ${fs.readlinkSync('/proc/self/ns/pid')}`;
}

// Containers labelled by any server: "ID OWNER NAME" lines.
function ownedContainers() {
  const out = docker('ps', '--all', '--no-trunc', '--filter', `label=${OWNER_LABEL}`,
    '--format', `{{.ID}} {{.Label "${OWNER_LABEL}"}} {{.Names}}`);
  return out ? out.split('\n') : [];
}

// The containers of one server (other servers may run at the same time): named mpes-<pid>-N.
function containersOf(serverPid) {
  return ownedContainers().filter((l) => l.split(' ')[2]?.startsWith(`mpes-${serverPid}-`));
}

async function run(client, script, extra = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script, ...extra } }, undefined, { timeout: 120000 });
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

describe('docker backend: the Python server\'s scenarios', { skip }, () => {
  let conn;
  before(async () => { conn = await connect(['--sandbox-backend', 'docker']); });
  after(async () => { await conn?.client.close(); });

  test('runs in the container and says so', async () => {
    const { sc, text } = await run(conn.client, 'import sys\nprint("hello", sys.version_info[:2])');
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.sandbox, 'docker');
    assert.match(sc.stdout, /^hello \(3, \d+\)\n$/);
  });

  test('writes to /opt, /home and /var are blocked; the work dir and /tmp are writable', async () => {
    const { sc, text } = await run(conn.client, `
import os
for d in ('/opt', '/home', '/var', '/usr', '/etc'):
    try:
        open(os.path.join(d, 'mpes-probe'), 'w').write('x')
        print(d, 'WRITTEN')
    except OSError as e:
        print(d, 'blocked', e.errno)
open('here.txt', 'w').write('ok'); open('/tmp/t.txt', 'w').write('ok')
print('work dir and tmp ok')
`);
    assert.equal(sc.exit_code, 0, text);
    for (const d of ['/opt', '/home', '/var', '/usr', '/etc']) {
      assert.match(sc.stdout, new RegExp(`^${d} blocked (13|30)$`, 'm'), text);
    }
    assert.match(sc.stdout, /work dir and tmp ok/);
  });

  test('the hostname differs from the host\'s', async () => {
    const { sc } = await run(conn.client, 'import socket\nprint(socket.gethostname())');
    assert.equal(sc.exit_code, 0);
    assert.notEqual(sc.stdout.trim(), os.hostname());
    assert.ok(sc.stdout.trim().length > 0);
  });

  test('sleep(300) with timeout 5 ends as a timeout', async () => {
    const started = Date.now();
    const { sc, text } = await run(conn.client, 'import time\nprint("sleeping", flush=True)\ntime.sleep(300)',
      { timeout_seconds: 5 });
    assert.equal(sc.timed_out, true, text);
    assert.equal(sc.stdout, 'sleeping\n');
    assert.ok(Date.now() - started < 30000, 'answered long after the deadline');
    // The zygote's container is still serving.
    const next = await run(conn.client, 'print(1)');
    assert.equal(next.sc.stdout, '1\n');
  });

  test('each run has namespaces of its own inside the container: own pids, unprivileged', async () => {
    const { sc, text } = await run(conn.client, `
import os
print(os.getpid() < 10, os.getuid(), len([p for p in os.listdir('/proc') if p.isdigit()]) < 5)
`);
    assert.equal(sc.stdout, 'True 1000 True\n', text);
  });

  test('check_environment shows the docker sandbox, probed', async () => {
    const result = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const text = textOf(result);
    assert.match(text, /Sandbox status: ready: docker \d+/);
    assert.match(text, new RegExp(IMAGE.replace(/[.:]/g, '\\$&')));
  });
});

describe('docker backend: the server owns its containers', { skip }, () => {
  test('labelled while it runs, removed at exit; a leftover of a gone server removed at start', async () => {
    // A container as a crashed server would leave it: our label, an owner that is not running.
    const leftover = docker('run', '-d', '--label', `${OWNER_LABEL}=gone-boot:1:1`, '--entrypoint',
      '/usr/bin/sleep', IMAGE, '600');
    const runtimeDirs = () => new Set(fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('mpes-docker-')));
    // A runtime directory as a server killed outright leaves it: its owner a process gone.
    const gone = fs.mkdtempSync(`${os.tmpdir()}/mpes-docker-`);
    fs.writeFileSync(`${gone}/seccomp.json`, '{}');
    fs.writeFileSync(`${gone}/.mpes-owner`, goneOwner());
    const dirsBefore = runtimeDirs();
    const conn = await connect(['--sandbox-backend', 'docker'], { env: { XDG_RUNTIME_DIR: '' } });
    let mine = [];
    try {
      const { sc, text } = await run(conn.client, 'print("up")');
      assert.equal(sc.stdout, 'up\n', text);
      const now = ownedContainers();
      assert.ok(!now.some((l) => l.startsWith(leftover)), `the leftover is still there: ${now.join('; ')}`);
      assert.equal(fs.existsSync(gone), false, 'the runtime directory of a gone server is still there');
      mine = containersOf(conn.transport.pid);
      assert.ok(mine.length >= 1, 'no labelled container while the server runs');
    } finally {
      await conn.client.close();
    }
    for (let i = 0; i < 100; i++) {
      const still = ownedContainers().filter((l) => mine.some((m) => m.split(' ')[0] === l.split(' ')[0]));
      if (still.length === 0) {
        // Nor is its runtime directory (control sockets, the seccomp profile) left behind.
        const left = [...runtimeDirs()].filter((n) => !dirsBefore.has(n) && `${os.tmpdir()}/${n}` !== gone);
        assert.deepEqual(left, [], 'the runtime directory outlived the server');
        return;
      }
      await sleep(100);
    }
    assert.fail(`containers left after the server exited: ${ownedContainers().join('; ')}`);
  });

  test('a container killed mid-run: its run is a sandbox failure, the next run gets a new container', async () => {
    const conn = await connect(['--sandbox-backend', 'docker']);
    try {
      await run(conn.client, 'print(0)');
      const before = containersOf(conn.transport.pid).map((l) => l.split(' ')[0]);
      assert.ok(before.length >= 1, 'no container of this server');
      const pending = run(conn.client, 'import time\nprint("started", flush=True)\ntime.sleep(60)', { timeout_seconds: 60 });
      await sleep(1500);
      for (const id of before) docker('kill', id);
      const { sc, text } = await pending;
      assert.equal(sc.exit_code, -1, text);
      assert.match(text, /zygote lost|sandbox/i);
      let next;
      for (let i = 0; i < 20; i++) {
        next = await run(conn.client, 'print("again")');
        if (next.sc.stdout === 'again\n') break;
        await sleep(250);
      }
      assert.equal(next.sc.stdout, 'again\n', next.text);
    } finally {
      await conn.client.close();
    }
  });
});

describe('docker backend: refused, never unsandboxed, when docker cannot give the sandbox', { skip }, () => {
  for (const [what, args, env, expect] of [
    ['a missing image', ['--docker-image', 'mpes-no-such-image:0'], {}, /image mpes-no-such-image:0 is not present.*Fix: docker pull/s],
    ['no docker client', ['--docker-path', '/nonexistent/docker'], {}, /is not installed.*Fix: install Docker/s],
    ['no daemon', [], { DOCKER_HOST: 'unix:///nonexistent/docker.sock' }, /daemon does not answer.*Fix: start it/s],
  ]) {
    test(what, async () => {
      const conn = await connect(['--sandbox-backend', 'docker', ...args], { env });
      try {
        const { result, text, sc } = await run(conn.client, 'print("must not run")');
        assert.equal(result.isError, true, text);
        assert.doesNotMatch(text, /must not run\n/);
        assert.match(text, expect);
        assert.notEqual(sc.stdout, 'must not run\n');
        const report = textOf(await conn.client.callTool({ name: 'check_environment', arguments: {} }));
        assert.match(report, /Sandbox status: unavailable: /);
      } finally {
        await conn.client.close();
      }
    });
  }
});
