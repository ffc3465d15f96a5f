// PEP 723 dependencies end to end, offline: small wheels written into a temporary directory and
// the server run with `--find-links DIR --offline --cache-dir DIR`. Covers the inline block, a
// dependency chain, the parameter merge (last spec wins), reuse without an installer run,
// progress, one install for concurrent first use, decisive failure lines, interpreter-provided
// numpy, a killed install, LRU eviction and pre-import of declared packages.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { backend, connect, serverPath, textOf } from './lib/client.mjs';
import { writePackages } from './lib/wheelhouse.mjs';
import { findUv, envWithUv, uvUnavailable } from './lib/tools.mjs';

// Where a cache dir keeps its environments: the docker backend's, built for its image's
// interpreter, live apart from the host's.
const DOCKER_IMAGE = process.env.MPES_DOCKER_IMAGE ?? 'mcp-python-exec-sandbox:bookworm';
function envsDir(cacheDir) {
  return backend === 'docker'
    ? path.join(cacheDir, `docker-${DOCKER_IMAGE.replace(/[^A-Za-z0-9.-]/g, '_')}`, 'envs')
    : path.join(cacheDir, 'envs');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));


const PACKAGES = [
  { name: 'mpes_leaf', version: '1.0', files: { 'mpes_leaf/__init__.py': "VERSION = '1.0'\n" } },
  { name: 'mpes_leaf', version: '2.0', files: { 'mpes_leaf/__init__.py': "VERSION = '2.0'\n" } },
  {
    name: 'mpes_chain', version: '1.0', requires: ['mpes-leaf>=1.0'],
    files: { 'mpes_chain/__init__.py': 'import mpes_leaf\nLEAF = mpes_leaf.VERSION\n' },
  },
  { name: 'mpes_modern', version: '1.0', requires: ['mpes-leaf>=2.0'], files: { 'mpes_modern/__init__.py': '' } },
  {
    name: 'mpes_slow', version: '1.0',
    files: { 'mpes_slow/__init__.py': 'import time\ntime.sleep(0.3)\nREADY = True\n' },
  },
  { name: 'mpes_future', version: '1.0', requires_python: '>=3.99', files: { 'mpes_future/__init__.py': '' } },
  { name: 'mpes_hang', version: '1.0', sdist_backend: 'import time\ntime.sleep(120)\n' },
  // ~600 KB each (incompressible), for the LRU bound of --env-cache-max-mb 1.
  ...['a', 'b', 'c'].map((x) => ({
    name: `mpes_big_${x}`, version: '1.0',
    files: { [`mpes_big_${x}/__init__.py`]: `NAME = '${x}'\n` },
    random_files: { [`mpes_big_${x}/blob.bin`]: 600 * 1024 },
  })),
];

function tempDir(prefix, parent = os.tmpdir()) {
  fs.mkdirSync(parent, { recursive: true });
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o755);  // the installer runs unprivileged when the server is root
  return dir;
}

// Caches live where the default does (~/.cache; /root is 0700 when the tests run as root), not in
// /tmp, which every run replaces with its own.
const cacheDir = () => tempDir('mpes-e2e-cache-', path.join(os.homedir(), '.cache'));


// Complete environments in the cache (content-addressed directory names).
function environments(cacheDir) {
  const envs = envsDir(cacheDir);
  if (!fs.existsSync(envs)) return [];
  return fs.readdirSync(envs).filter((n) => /^[0-9a-f]{64}$/.test(n));
}

function buildDirs(cacheDir) {
  const envs = envsDir(cacheDir);
  if (!fs.existsSync(envs)) return [];
  return fs.readdirSync(envs).filter((n) => n.startsWith('.tmp-'));
}

// The server logs one line per installer run ("installing N requirement(s) with pip|uv into ...").
function installerRuns(conn) {
  return (conn.stderr().match(/installing \d+ requirement\(s\) with /g) ?? []).length;
}

async function run(client, script, dependencies = [], options = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script, dependencies } },
    undefined,
    { timeout: 180000, resetTimeoutOnProgress: true, ...options },
  );
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

function block(deps) {
  return `# /// script\n# dependencies = [${deps.map((d) => JSON.stringify(d)).join(', ')}]\n# ///\n`;
}

const wheels = tempDir('mpes-e2e-wheels-');
writePackages(wheels, PACKAGES);
process.on('exit', () => fs.rmSync(wheels, { recursive: true, force: true }));

// pip, the fallback installer, also where uv is on PATH (uv: the last suite, and pypi.test.mjs).
function serverArgs(cacheDir, extra = []) {
  return ['--find-links', wheels, '--offline', '--cache-dir', cacheDir, '--log-level', 'info',
    '--uv-path', '/nonexistent/uv', ...extra];
}

describe('dependencies (offline, --find-links)', () => {
  let cache, conn;
  before(async () => {
    cache = cacheDir();
    conn = await connect(serverArgs(cache));
  });
  after(async () => {
    await conn?.client.close();
    fs.rmSync(cache, { recursive: true, force: true });
  });

  test('an inline block installs a dependency chain; the script keeps its line numbers', async () => {
    const script = block(['mpes_chain']) +
      'import mpes_chain, mpes_leaf\nprint(mpes_chain.LEAF)\nraise SystemExit(mpes_leaf.missing)\n';
    const { result, text, sc } = await run(conn.client, script);
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.stdout, '2.0\n', text);
    // Line 6 of the user's script: the block was not rewritten away.
    assert.match(sc.stderr, /script\.py", line 6/, text);
    assert.match(sc.stderr, /AttributeError/, text);
    assert.equal(environments(cache).length, 1);
  });

  test('the dependencies parameter merges with the block, the last spec winning', async () => {
    const script = block(['mpes-leaf==2.0', 'mpes_chain']) + 'import mpes_chain\nprint(mpes_chain.LEAF)\n';
    const { text, sc } = await run(conn.client, script, ['mpes_leaf==1.0']);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.stdout, '1.0\n', text);
  });

  test('a second call with the same set runs no installer', async () => {
    const before = installerRuns(conn);
    assert.ok(before >= 1, 'the earlier installs were logged');
    const { text, sc } = await run(conn.client, 'import mpes_chain\nprint(mpes_chain.LEAF)\n', ['mpes_chain']);
    assert.equal(sc.stdout, '2.0\n', text);
    assert.equal(installerRuns(conn), before);
  });

  test('installs report progress to a caller with a progress token', async () => {
    const progress = [];
    const { text, sc } = await run(conn.client, 'import mpes_slow\nprint(mpes_slow.READY)\n', ['mpes_slow'],
      { onprogress: (p) => progress.push(p) });
    assert.equal(sc.stdout, 'True\n', text);
    assert.ok(progress.length >= 1, 'at least one notifications/progress during the install');
  });

  test('a declared package is imported by the warm interpreter before the next call', async () => {
    // mpes_slow takes 0.3 s to import; already in sys.modules means that cost was paid before.
    const script = "import sys\nprint('mpes_slow' in sys.modules)\nimport mpes_slow\n";
    await run(conn.client, script, ['mpes_slow']);
    const { text, sc } = await run(conn.client, script, ['mpes_slow']);
    assert.equal(sc.stdout, 'True\n', text);
  });

  test('concurrent first use of a new set installs once', async () => {
    const before = installerRuns(conn);
    const script = 'import mpes_modern, mpes_leaf\nprint(mpes_leaf.VERSION)\n';
    const results = await Promise.all([1, 2, 3].map(() => run(conn.client, script, ['mpes_modern'])));
    for (const { text, sc } of results) assert.equal(sc.stdout, '2.0\n', text);
    assert.equal(installerRuns(conn), before + 1);
  });

  test('an unknown package fails with the installer\'s decisive line, not its log', async () => {
    const { result, text, sc } = await run(conn.client, 'print(1)\n', ['mpes-no-such-package']);
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.notEqual(sc.exit_code, 0);
    assert.match(text, /No matching distribution found for mpes-no-such-package/);
    assert.doesNotMatch(text, /Looking in links/);
    assert.match(text, /--- end: install_failed ---/);
  });

  test('a requires-python mismatch and a version conflict say which requirement failed', async () => {
    const future = await run(conn.client, 'print(1)\n', ['mpes_future']);
    assert.equal(future.sc.end_reason, 'install_failed', future.text);
    assert.match(future.text, />=3\.99/);
    const conflict = await run(conn.client, 'print(1)\n', ['mpes_modern', 'mpes-leaf==1.0']);
    assert.equal(conflict.sc.end_reason, 'install_failed', conflict.text);
    assert.match(conflict.text, /conflict/);
    assert.match(conflict.text, /mpes-leaf>=2\.0/);
  });

  test('interpreter-provided packages (Debian\'s python3-numpy) are used offline', async () => {
    const before = installerRuns(conn);
    const { text, sc } = await run(conn.client, 'import numpy\nprint(numpy.__file__)\n', ['numpy']);
    assert.equal(sc.exit_code, 0, text);
    assert.match(sc.stdout, /^\/usr\/lib\/python3\/dist-packages\/numpy\//, text);
    assert.equal(installerRuns(conn), before);
  });
});

describe('a killed install', () => {
  test('leaves no environment a later call could use', async () => {
    const cache = cacheDir();
    try {
      const first = await connect(serverArgs(cache));
      // mpes_hang's build backend sleeps for two minutes: the install is in progress until killed.
      const pending = run(first.client, 'import mpes_hang\n', ['mpes_hang', 'mpes_leaf']).catch((e) => e);
      for (let i = 0; i < 600 && buildDirs(cache).length === 0; i++) await sleep(50);
      assert.equal(buildDirs(cache).length, 1, 'the install started');
      await sleep(500);
      process.kill(first.transport.pid, 'SIGKILL');
      await pending;
      await first.client.close().catch(() => {});
      assert.deepEqual(environments(cache), []);

      const second = await connect(serverArgs(cache));
      try {
        const { text, sc } = await run(second.client, 'import mpes_leaf\nprint(mpes_leaf.VERSION)\n', ['mpes_leaf']);
        assert.equal(sc.stdout, '2.0\n', text);
        assert.equal(environments(cache).length, 1);
        assert.deepEqual(buildDirs(cache), [], 'the abandoned build was removed');
      } finally {
        await second.client.close();
      }
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('the environment cache bound', () => {
  test('--env-cache-max-mb evicts least recently used environments', async () => {
    const cache = cacheDir();
    const conn = await connect(serverArgs(cache, ['--env-cache-max-mb', '1', '--max-zygotes', '1']));
    try {
      for (const x of ['a', 'b', 'c']) {
        const { text, sc } = await run(conn.client, `import mpes_big_${x}\nprint(mpes_big_${x}.NAME)\n`, [`mpes_big_${x}`]);
        assert.equal(sc.stdout, `${x}\n`, text);
      }
      // Three ~600 KB environments do not fit in 1 MB: at most the ones still in use remain.
      assert.ok(environments(cache).length < 3, `environments left: ${environments(cache).length}`);
      // An evicted set is simply installed again.
      const again = await run(conn.client, 'import mpes_big_a\nprint(mpes_big_a.NAME)\n', ['mpes_big_a']);
      assert.equal(again.sc.stdout, 'a\n', again.text);
    } finally {
      await conn.client.close();
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('idle zygotes', () => {
  test('--zygote-idle-seconds stops an unused environment\'s zygote, never the default one', async () => {
    const cache = cacheDir();
    const conn = await connect(serverArgs(cache, ['--zygote-idle-seconds', '1', '--no-warm-cache']));
    const zygotes = async () => {
      const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
      return env.structuredContent.engine.zygotes;
    };
    try {
      const first = await run(conn.client, 'import mpes_leaf\nprint(mpes_leaf.VERSION)\n', ['mpes_leaf']);
      assert.equal(first.sc.stdout, '2.0\n', first.text);
      const busy = await run(conn.client, "print('default')");
      assert.equal(busy.sc.stdout, 'default\n', busy.text);
      assert.equal((await zygotes()).length, 2, JSON.stringify(await zygotes()));
      // The environment's zygote goes once idle; the default one stays however long it idles.
      let left = await zygotes();
      for (let i = 0; i < 40 && left.length > 1; i++) {
        await sleep(250);
        left = await zygotes();
      }
      assert.equal(left.length, 1, JSON.stringify(left));
      assert.match(conn.stderr(), /stopping the zygote for .*: idle for 1 s/);
      await sleep(1500);  // the default zygote has now idled past the limit too
      const still = await zygotes();
      assert.equal(still.length, 1, JSON.stringify(still));
      assert.equal(still[0].state, 'ready');
      // The next run on that environment starts a fresh zygote, without installing again.
      const again = await run(conn.client, 'import mpes_leaf\nprint(mpes_leaf.VERSION)\n', ['mpes_leaf']);
      assert.equal(again.sc.stdout, '2.0\n', again.text);
      assert.equal(installerRuns(conn), 1);
    } finally {
      await conn.client.close();
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('a cache dir under /tmp', () => {
  test('works: environments are mounted at a fixed place, not at their host path', async () => {
    // Every run gets its own /tmp, which would hide an environment mounted at /tmp/...
    const cache = tempDir('mpes-e2e-tmpcache-');
    const conn = await connect(serverArgs(cache));
    try {
      const { text, sc } = await run(conn.client,
        'import mpes_chain, mpes_leaf\nprint(mpes_chain.LEAF, mpes_leaf.__file__.startswith("/tmp/"))\n',
        ['mpes_chain', 'mpes-leaf==1.0']);
      assert.equal(sc.stdout, '1.0 False\n', text);
      assert.ok(fs.readdirSync(envsDir(cache)).length >= 1, 'the environment is in the cache dir');
    } finally {
      await conn.client.close();
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('cache warming', () => {
  async function warmState(client) {
    const env = await client.callTool({ name: 'check_environment', arguments: {} });
    return env.structuredContent?.engine?.environments?.cache_warming;
  }
  async function settledWarmState(client) {
    for (let i = 0; i < 400; i++) {
      const state = await warmState(client);
      if (state && state !== 'not started' && state !== 'running') return state;
      await sleep(250);
    }
    return warmState(client);
  }

  test('runs after start-up, is reported, and a failure is not retried at every start', async () => {
    const cache = cacheDir();
    // An index nothing listens on: the prefetch of packages the interpreter lacks must fail.
    const args = ['--cache-dir', cache, '--index-url', 'http://127.0.0.1:9/simple', '--log-level', 'info'];
    // pip retries a refused connection five times per package with back-off (a minute and more
    // for the list): this user's pip configuration says not to.
    const env = { PIP_RETRIES: '0' };
    try {
      const first = await connect(args, { env });
      let state;
      try {
        state = await settledWarmState(first.client);
        const run = await first.client.callTool({ name: 'execute_python', arguments: { script: 'print(1)' } });
        assert.equal(run.structuredContent?.stdout, '1\n', 'runs are served whatever warming does');
      } finally {
        await first.client.close();
      }
      assert.match(state, /^(failed: |done: )/, `first start: ${state}`);
      const second = await connect(args, { env });
      try {
        const again = await settledWarmState(second.client);
        if (state.startsWith('failed')) {
          assert.match(again, /^skipped: the last attempt \d+ min ago failed: /);
        } else {
          assert.match(again, /^done: .* min ago\)$/);
        }
        assert.doesNotMatch(second.stderr(), /installing \d+ requirement/, 'no installer ran again');
      } finally {
        await second.client.close();
      }
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });

  test('warms for the interpreter scripts run on (--python-version), fetching what it lacks', async (t) => {
    // Find an interpreter other than the default (e.g. a pyenv 3.12), as the server sees them.
    const probe = await connect(['--no-warm-cache']);
    let other;
    try {
      for (let i = 0; i < 200 && !other; i++) {
        const env = await probe.client.callTool({ name: 'check_environment', arguments: {} });
        const all = env.structuredContent?.interpreters ?? [];
        const def = all.find((it) => it.default);
        other = all.find((it) => def && it.shared && !it.version.startsWith(def.version.split('.').slice(0, 2).join('.') + '.'));
        if (!other && all.length > 1) break;
        if (!other) await sleep(250);
      }
    } finally {
      await probe.client.close();
    }
    if (!other) {
      t.skip('SKIPPED: no interpreter of another Python version than the default on this machine for this user');
      return;
    }
    const majorMinor = other.version.split('.').slice(0, 2).join('.');
    // What that interpreter lacks of the warm-up list, asked of the interpreter itself.
    const list = fs.readFileSync(new URL('../profiles/warmup_packages.txt', import.meta.url), 'utf8')
      .split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
    const lacking = Number(execFileSync(other.executable, ['-I', '-c',
      'import sys, importlib.metadata as m\n' +
      'def has(n):\n    try:\n        m.version(n); return True\n    except m.PackageNotFoundError:\n        return False\n' +
      'print(sum(not has(n) for n in sys.argv[1:]))', ...list], { encoding: 'utf8' }).trim());
    const cache = cacheDir();
    try {
      // An index nothing listens on: what matters is what the installer was asked for.
      const conn = await connect(['--cache-dir', cache, '--python-version', majorMinor,
        '--index-url', 'http://127.0.0.1:9/simple', '--log-level', 'info'], { env: { PIP_RETRIES: '0' } });
      try {
        const state = await settledWarmState(conn.client);
        if (lacking === 0) {
          assert.match(state, /already has every warm-up package/, state);
        } else {
          assert.match(conn.stderr(), new RegExp(`installing ${lacking} requirement\\(s\\) with (uv|pip) into [^\\n]*\\.warm-`),
            `Python ${other.version} lacks ${lacking} of ${list.length}: ${conn.stderr()}`);
          assert.match(state, /^(failed: |done: \d+ package\(s\) cached for Python )/, state);
        }
      } finally {
        await conn.client.close();
      }
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });

  test('--no-warm-cache and --offline say so', async () => {
    const cache = cacheDir();
    try {
      for (const [flag, expected] of [['--no-warm-cache', /^disabled \(--no-warm-cache\)$/], ['--offline', /^skipped: --offline$/]]) {
        const conn = await connect(['--cache-dir', cache, flag]);
        try {
          assert.match(await settledWarmState(conn.client), expected, flag);
        } finally {
          await conn.client.close();
        }
      }
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

const uv = findUv();

describe('uv installer', { skip: uv ? false : `SKIPPED: ${uvUnavailable}` }, () => {
  test('installs offline from --find-links with uv', async () => {
    const cache = cacheDir();
    const conn = await connect(['--find-links', wheels, '--offline', '--cache-dir', cache, '--log-level', 'info'],
      { env: envWithUv(uv) });
    try {
      const { text, sc } = await run(conn.client, 'import mpes_chain\nprint(mpes_chain.LEAF)\n', ['mpes_chain', 'mpes-leaf==1.0']);
      assert.equal(sc.stdout, '1.0\n', text);
      assert.match(conn.stderr(), /installing \d+ requirement\(s\) with uv/);
    } finally {
      await conn.client.close();
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});

// A find-links directory only the server's user can read (mkdtemp's 0700). Started by root, the
// server runs the installer as nobody, which cannot read it: it refuses at start-up, naming the
// directory and the fix. Started by the directory's owner, installs from it work.
describe('--find-links in a directory private to the server\'s user', () => {
  const root = process.getuid() === 0;
  test('as root: refused at start-up with the directory and the fix', { skip: root ? false : 'SKIPPED: not root' }, () => {
    const privateWheels = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-e2e-private-wheels-'));
    try {
      const r = spawnSync(serverPath, ['--find-links', privateWheels], { input: '', encoding: 'utf8', timeout: 10000 });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`--find-links ${privateWheels}: .*uid 65534.*chmod o\\+rx ${privateWheels}`));
      assert.equal(r.stdout, '');
      // Readable by others: accepted (the server starts, and ends at the end of its input).
      fs.chmodSync(privateWheels, 0o755);
      const ok = spawnSync(serverPath, ['--find-links', privateWheels, '--no-warm-cache', '--log-level', 'off'],
        { input: '', encoding: 'utf8', timeout: 30000 });
      assert.equal(ok.status, 0, ok.stderr);
    } finally {
      fs.rmSync(privateWheels, { recursive: true, force: true });
    }
  });
  for (const installer of ['pip', 'uv']) {
    const skip = root ? 'SKIPPED: as root it is refused (above)'
      : installer === 'uv' && !uv ? `SKIPPED: ${uvUnavailable}` : false;
    test(`as its owner: installs from it with ${installer}`, { skip }, async () => {
      const privateWheels = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-e2e-private-wheels-'));
      assert.equal(fs.statSync(privateWheels).mode & 0o777, 0o700);
      writePackages(privateWheels, PACKAGES);
      const cache = cacheDir();
      const args = ['--find-links', privateWheels, '--offline', '--cache-dir', cache, '--log-level', 'info'];
      const conn = installer === 'pip'
        ? await connect([...args, '--uv-path', '/nonexistent/uv'])
        : await connect(args, { env: envWithUv(uv) });
      try {
        const { text, sc } = await run(conn.client, 'import mpes_leaf\nprint(mpes_leaf.VERSION)\n', ['mpes-leaf==1.0']);
        assert.equal(sc.stdout, '1.0\n', text);
        assert.match(conn.stderr(), new RegExp(`installing \\d+ requirement\\(s\\) with ${installer}`));
      } finally {
        await conn.client.close();
        fs.rmSync(cache, { recursive: true, force: true });
        fs.rmSync(privateWheels, { recursive: true, force: true });
      }
    });
  }
});
