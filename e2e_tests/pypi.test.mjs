// Dependencies from the real Python package index, installed by the real uv: what a user's
// script declares in its PEP 723 block (or the dependencies parameter) is fetched and run. The
// index is reached the way the user running the tests reaches it: their environment and their
// uv/pip configuration, passed through by the server (nothing in this file names an index).
// One cache directory for the whole file, so each distribution is downloaded once per run.
// MPES_E2E_PYPI_LONG=1 adds the data-science set (pandas, numpy, scipy, scikit-learn, matplotlib,
// polars, beautifulsoup4, sympy, pydantic) installed into a fresh environment.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, textOf } from './lib/client.mjs';
import { findUv, envWithUv, uvUnavailable, userEnv } from './lib/tools.mjs';

const uv = findUv();
const LONG = process.env.MPES_E2E_PYPI_LONG === '1';

function tempDir(prefix, parent) {
  fs.mkdirSync(parent, { recursive: true });
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  fs.chmodSync(dir, 0o755);  // the installer runs unprivileged when the server is root
  return dir;
}

// Where the default cache lives (~/.cache), not /tmp, which every run replaces with its own.
const cacheRoot = path.join(os.homedir(), '.cache');

async function run(client, script, dependencies = [], extra = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script, dependencies, timeout_seconds: 120, ...extra } },
    undefined,
    { timeout: 900000, resetTimeoutOnProgress: true },
  );
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

function block(deps) {
  return `# /// script\n# dependencies = [${deps.map((d) => JSON.stringify(d)).join(', ')}]\n# ///\n`;
}

// Script lines that print, for each named module, whether it came from somewhere other than the
// interpreter's own site-packages (that is, from the run's environment).
function fromEnv(...modules) {
  return 'import site as _site\n' + modules.map((m) =>
    `print(not ${m}.__file__.startswith(tuple(_site.getsitepackages())), ${JSON.stringify(m)})\n`).join('');
}

function installerRuns(conn, kind) {
  return (conn.stderr().match(new RegExp(`installing \\d+ requirement\\(s\\) with ${kind} `, 'g')) ?? []).length;
}

describe('PyPI with uv', { skip: uv ? false : `SKIPPED: ${uvUnavailable}` }, () => {
  let cache, conn;
  before(async () => {
    cache = tempDir('mpes-e2e-pypi-', cacheRoot);
    conn = await connect(['--cache-dir', cache, '--no-warm-cache', '--log-level', 'info'],
      { env: userEnv(envWithUv(uv)) });
  });
  after(async () => {
    await conn?.client.close();
    if (cache) fs.rmSync(cache, { recursive: true, force: true });
  });

  test('check_environment names the uv installs use, with its version', async () => {
    const version = execFileSync(uv.bin, ['--version'], { encoding: 'utf8' }).trim();
    const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const text = textOf(env);
    assert.equal(text.split('\n')[1], `uv: ${version}`, text);  // the Python server's line
    assert.equal(env.structuredContent?.uv, version);
    const installer = env.structuredContent?.engine?.environments?.installer ?? '';
    assert.ok(installer.startsWith(`${version} (/`), installer);
  });

  test('requests is fetched from the index and imported from the new environment', async () => {
    const script = 'import requests\nprint(requests.__version__)\n' + fromEnv('requests') +
      'print(requests.get.__module__)\n';
    const { result, text, sc } = await run(conn.client, script, ['requests']);
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.exit_code, 0, text);
    assert.match(sc.stdout, /^2\.\d+\.\d+\nTrue requests\nrequests\.api\n$/, text);
    assert.equal(installerRuns(conn, 'uv'), 1, conn.stderr());
  });

  test('pydantic>=2 installs a 2.x', async () => {
    const script = 'import pydantic\nprint(pydantic.VERSION)\n' +
      'class M(pydantic.BaseModel):\n    x: int\nprint(M(x="3").x + 1)\n';
    const { text, sc } = await run(conn.client, script, ['pydantic>=2']);
    assert.equal(sc.exit_code, 0, text);
    assert.match(sc.stdout, /^2\.\d+(\.\d+)?\S*\n4\n$/, text);
  });

  test('rich from an inline block', async () => {
    const script = block(['rich']) +
      'from rich.console import Console\nc = Console(width=20, force_terminal=False)\n' +
      'c.print("[bold]hello[/bold] rich")\nimport rich\n' + fromEnv('rich');
    const { text, sc } = await run(conn.client, script);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.stdout, 'hello rich\nTrue rich\n', text);
  });

  test('pandas==2.2.3 wins over the interpreter\'s own pandas, which does not leak in', async () => {
    const own = execFileSync('/usr/bin/python3', ['-c', 'import pandas; print(pandas.__version__)'],
      { encoding: 'utf8' }).trim();
    assert.notEqual(own, '2.2.3', 'the interpreter has another pandas');
    // numpy too: pandas 2.2.3's own, not the interpreter's older one.
    const script = 'import pandas, numpy\nprint(pandas.__version__)\n' + fromEnv('pandas', 'numpy') +
      'print(pandas.DataFrame({"a": [1, 2, 3]})["a"].sum())\n';
    const { text, sc } = await run(conn.client, script, ['pandas==2.2.3']);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.stdout, '2.2.3\nTrue pandas\nTrue numpy\n6\n', text);
  });

  test('a package that does not exist: install_failed with uv\'s own message', async () => {
    const { result, text, sc } = await run(conn.client, 'print(1)\n', ['mpes-no-such-package-on-any-index']);
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.match(text, /mpes-no-such-package-on-any-index/);
    assert.match(text, /No solution found|not found in the package registry/, text);
    assert.equal(sc.stdout ?? '', '', 'the script did not run');
  });

  test('a version conflict names the packages in conflict', async () => {
    const { text, sc } = await run(conn.client, 'print(1)\n', ['requests==2.31.0', 'urllib3<1.21']);
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.match(text, /requests==2\.31\.0/, text);
    assert.match(text, /urllib3/, text);
    assert.match(text, /unsatisfiable|No solution found/, text);
  });

  test('an sdist that needs a build is built (sandboxed) and runs', async () => {
    // docopt 0.6.2 is published as a source distribution only.
    const script = 'import docopt\nprint(docopt.__version__)\n' +
      'print(docopt.docopt("Usage: p <x>", argv=["7"])["<x>"])\n';
    const { text, sc } = await run(conn.client, script, ['docopt==0.6.2']);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.stdout, '0.6.2\n7\n', text);
  });

  test('the same new set asked by 4 concurrent calls installs once and all succeed', async () => {
    const before = installerRuns(conn, 'uv');
    const script = 'import tomli_w\nprint(tomli_w.dumps({"a": 1}).strip())\n';
    const results = await Promise.all([1, 2, 3, 4].map(() => run(conn.client, script, ['tomli-w==1.0.0'])));
    for (const { text, sc } of results) assert.equal(sc.stdout, 'a = 1\n', text);
    assert.equal(installerRuns(conn, 'uv'), before + 1, conn.stderr());
  });

  for (const version of ['3.12', '3.13']) {
    test(`numpy wheels on Python ${version}`, async (t) => {
      const env = await conn.client.callTool({ name: 'check_environment', arguments: {} });
      if (!new RegExp(`\\b${version.replace('.', '\\.')}\\.\\d+`).test(textOf(env))) {
        t.skip(`SKIPPED: no CPython ${version} on this machine for this user`);
        return;
      }
      const script = 'import sys, numpy\nprint("%d.%d" % sys.version_info[:2])\nprint(int(numpy.arange(5).sum()))\n';
      const { text, sc } = await run(conn.client, script, ['numpy'], { python_version: version });
      assert.equal(sc.exit_code, 0, text);
      assert.equal(sc.stdout, `${version}\n10\n`, text);
    });
  }

  test('data-science packages from the index into a fresh environment',
    { skip: LONG ? false : 'long form only (MPES_E2E_PYPI_LONG=1)' }, async () => {
      const pkgs = ['pandas', 'numpy', 'scipy', 'scikit-learn', 'matplotlib', 'polars', 'beautifulsoup4', 'sympy', 'pydantic'];
      const script = 'import importlib, sys\n' +
        'mods = ["pandas", "numpy", "scipy", "sklearn", "matplotlib", "polars", "bs4", "sympy", "pydantic"]\n' +
        'for m in mods:\n    mod = importlib.import_module(m)\n' +
        '    assert not mod.__file__.startswith("/usr/lib/python3"), (m, mod.__file__)\n' +
        'import numpy as np, pandas as pd, polars as pl, sympy\n' +
        'from sklearn.linear_model import LinearRegression\n' +
        'X = np.arange(10).reshape(-1, 1); y = 2 * X.ravel() + 1\n' +
        'print(round(float(LinearRegression().fit(X, y).coef_[0]), 3))\n' +
        'print(pl.DataFrame({"a": [1, 2]})["a"].sum(), pd.Series([1, 2]).sum(), sympy.expand("(x+1)**2"))\n';
      const { text, sc } = await run(conn.client, script, pkgs.map((p) => `${p}>=0`), { python_version: '3.12', timeout_seconds: 300 });
      assert.equal(sc.exit_code, 0, text);
      assert.equal(sc.stdout, '2.0\n3 3 x**2 + 2*x + 1\n', text);
    });
});

describe('the user\'s index configuration reaches uv, the server\'s flags override it',
  { skip: uv ? false : `SKIPPED: ${uvUnavailable}` }, () => {
    // Addresses nothing listens on: a failure that names them proves which configuration uv used.
    const DEAD_ENV = 'http://127.0.0.1:9/mpes-env-index/simple';
    const DEAD_TOML = 'http://127.0.0.1:9/mpes-toml-index/simple';
    const DEAD_FLAG = 'http://127.0.0.1:9/mpes-flag-index/simple';
    let cache;
    before(() => { cache = tempDir('mpes-e2e-pypi-cfg-', cacheRoot); });
    after(() => fs.rmSync(cache, { recursive: true, force: true }));

    async function failure(args, env) {
      const conn = await connect(['--cache-dir', cache, '--no-warm-cache', ...args], { env });
      try {
        const { text, sc } = await run(conn.client, 'print(1)\n', ['tomli-w==1.0.0']);
        assert.equal(sc.end_reason, 'install_failed', text);
        return text;
      } finally {
        await conn.client.close();
      }
    }

    test('UV_INDEX_URL from the environment', async () => {
      const text = await failure([], envWithUv(uv, { ...process.env, UV_INDEX_URL: DEAD_ENV, UV_HTTP_RETRIES: '0' }));
      assert.match(text, /mpes-env-index/, text);
    });

    test('UV_DEFAULT_INDEX from the environment', async () => {
      const text = await failure([], envWithUv(uv, { ...process.env, UV_DEFAULT_INDEX: DEAD_ENV, UV_HTTP_RETRIES: '0' }));
      assert.match(text, /mpes-env-index/, text);
    });

    test('the user\'s uv.toml', async () => {
      const config = tempDir('mpes-e2e-uvtoml-', cacheRoot);
      try {
        fs.mkdirSync(path.join(config, 'uv'));
        fs.writeFileSync(path.join(config, 'uv', 'uv.toml'), `index-url = "${DEAD_TOML}"\n`);
        const text = await failure([], envWithUv(uv, { ...process.env, XDG_CONFIG_HOME: config, UV_HTTP_RETRIES: '0' }));
        assert.match(text, /mpes-toml-index/, text);
      } finally {
        fs.rmSync(config, { recursive: true, force: true });
      }
    });

    test('--index-url overrides UV_INDEX_URL', async () => {
      const text = await failure(['--index-url', DEAD_FLAG],
        envWithUv(uv, { ...process.env, UV_INDEX_URL: DEAD_ENV, UV_HTTP_RETRIES: '0' }));
      assert.match(text, /mpes-flag-index/, text);
      assert.doesNotMatch(text, /mpes-env-index/, text);
    });

    test('--offline overrides the index: nothing is fetched', async () => {
      const text = await failure(['--offline'], envWithUv(uv, { ...process.env, UV_INDEX_URL: DEAD_ENV }));
      assert.match(text, /not found in the cache|offline/i, text);
      assert.doesNotMatch(text, /mpes-env-index/, text);
    });
  });

describe('PyPI with pip (the fallback when uv is not found)', () => {
  let cache, conn;
  before(async () => {
    cache = tempDir('mpes-e2e-pypi-pip-', cacheRoot);
    conn = await connect(['--cache-dir', cache, '--no-warm-cache', '--uv-path', '/nonexistent/uv', '--log-level', 'info']);
  });
  after(async () => {
    await conn?.client.close();
    if (cache) fs.rmSync(cache, { recursive: true, force: true });
  });

  test('pip installs from the index with the user\'s pip configuration', async () => {
    const script = 'import tomli_w\nprint(tomli_w.dumps({"b": 2}).strip())\n' + fromEnv('tomli_w');
    const { text, sc } = await run(conn.client, script, ['tomli-w==1.0.0']);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.stdout, 'b = 2\nTrue tomli_w\n', text);
    assert.equal(installerRuns(conn, 'pip'), 1, conn.stderr());
  });

  test('an unknown package: install_failed with pip\'s own message', async () => {
    const { text, sc } = await run(conn.client, 'print(1)\n', ['mpes-no-such-package-on-any-index']);
    assert.equal(sc.end_reason, 'install_failed', text);
    assert.match(text, /No matching distribution found for mpes-no-such-package-on-any-index/, text);
  });
});
