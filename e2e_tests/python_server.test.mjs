// Side by side with the Python server this project replaces: mcp-python-exec-sandbox 0.1.8 from
// PyPI (hash-pinned in scripts/requirements-python-server.txt; scripts/install-deps.sh puts it
// in .tools/python-server, on CPython 3.13). The same real MCP client sends the same calls (its
// README examples and its e2e scenarios) to both servers and compares the text results section
// by section. What may differ is exactly what README's "Differences from the Python server"
// lists; everything else must be equal.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serverPath, textOf } from './lib/client.mjs';
import { findUv, envWithUv, uvUnavailable } from './lib/tools.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const venv = process.env.MPES_PYTHON_SERVER_VENV ?? path.resolve(here, '../.tools/python-server');
const pythonServer = path.join(venv, 'bin', 'mcp-python-exec-sandbox');
const uv = findUv();

function skipReason() {
  if (!fs.existsSync(pythonServer)) return `SKIPPED: the Python server is not installed at ${venv} (scripts/install-deps.sh)`;
  if (!uv) return `SKIPPED: ${uvUnavailable}`;
  return false;
}

// The CPython the Python server's environment was made from (pyvenv.cfg's home): the Python
// server runs scripts with `uv run --python 3.13`, which finds it on PATH.
function python313Dir() {
  const cfg = fs.readFileSync(path.join(venv, 'pyvenv.cfg'), 'utf8');
  return cfg.match(/^home\s*=\s*(.+)$/m)[1].trim();
}

async function start(command, args, env) {
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: 'mpes-side-by-side', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

// "--- name ---" / "--- name: value ---" sections, in order, with the text under each.
function sections(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = line.match(/^--- ([a-z_]+)(?:: (.*))? ---$/);
    if (m) {
      out.push({ name: m[1], value: m[2] ?? null, body: [] });
    } else if (out.length) {
      out[out.length - 1].body.push(line);
    }
  }
  return out.map((s) => ({ ...s, body: s.body.join('\n') }));
}

// Sections only this server adds (README: Differences from the Python server).
const OURS_ONLY = new Set(['end', 'usage', 'value', 'notes']);

// The Python server's stderr carries uv's own lines from `uv run` ("Installed 1 package in 3ms",
// " + six==1.16.0", warnings): not the script's.
function scriptStderr(body) {
  return body.split('\n').filter((l) =>
    !/^\s*(warning: |Installed \d+ packages? in |Resolved \d+ packages? in |Prepared \d+ packages? in |Downloading |Downloaded |Building |Built |Audited |\+ )/.test(l))
    .join('\n');
}

// Tracebacks: the Python server names its temporary file and counts the metadata block it adds
// in front of the script; this server says "script.py" and the user's own line numbers.
const tracebackShape = (s) => s.replace(/File "[^"]*script\.py", line \d+/g, 'File "script.py", line N');

describe('side by side with the Python server 0.1.8', { skip: skipReason() }, () => {
  let theirs, ours, home;
  before(async () => {
    // The Python server passes only PATH, HOME, LANG, LC_ALL, TERM, TMPDIR and USER to uv: its
    // user trusts the index's CA through uv's configuration in that HOME (nothing else reaches it).
    home = fs.mkdtempSync(path.join(os.homedir(), '.cache', 'mpes-e2e-pyserver-home-'));
    fs.mkdirSync(path.join(home, '.config', 'uv'), { recursive: true });
    fs.mkdirSync(path.join(home, '.cache', 'uv'), { recursive: true });
    fs.writeFileSync(path.join(home, '.config', 'uv', 'uv.toml'), 'system-certs = true\n');
    const base = envWithUv(uv);
    const [uvDir, ...rest] = base.PATH.split(':');
    // Its native backend mounts only /usr, /lib, /bin, /sbin and /etc/ssl, so it cannot start a uv
    // or a Python outside them (the project's pinned uv, pyenv's 3.13): it runs with `none` here.
    theirs = await start(pythonServer, ['--sandbox-backend', 'none', '--no-warm-cache'],
      { ...base, HOME: home, PATH: [uvDir, python313Dir(), ...rest].join(':') });
    ours = await start(serverPath, ['--python-version', '3.13', '--no-warm-cache'], base);
  });
  after(async () => {
    await theirs?.client.close();
    await ours?.client.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  async function both(name, args) {
    const call = (c) => c.client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
    const [a, b] = await Promise.all([call(theirs), call(ours)]);
    return { theirs: a, ours: b, theirsText: textOf(a), oursText: textOf(b) };
  }

  // Compares two execute_python results section by section; `allow` names what may differ.
  function compareRun(r, { allow = [] } = {}) {
    const t = sections(r.theirsText);
    const o = sections(r.oursText).filter((s) => !OURS_ONLY.has(s.name));
    const context = `\n--- Python server:\n${r.theirsText}\n--- this server:\n${r.oursText}`;
    assert.equal(r.theirs.isError ?? false, r.ours.isError ?? false, context);
    const names = (list) => list.map((s) => s.name).filter((n) => !(allow.includes('stdout') && n === 'stdout'));
    // The Python server's stderr section may hold only uv's lines.
    const theirsNames = names(t).filter((n) => n !== 'stderr' || scriptStderr(t.find((s) => s.name === 'stderr').body).trim() !== '');
    assert.deepEqual(names(o), theirsNames, `the same sections in the same order${context}`);
    for (const s of t) {
      const mine = o.find((x) => x.name === s.name);
      if (s.name === 'duration_ms') {
        assert.match(mine.value, /^\d+$/);
      } else if (s.name === 'stdout' && !allow.includes('stdout')) {
        assert.equal(mine.body, s.body, `stdout${context}`);
      } else if (s.name === 'stderr' && mine) {
        if (allow.includes('install error text')) {
          assert.match(mine.body, /No solution found/, context);
        } else {
          assert.equal(tracebackShape(mine.body).trim(), tracebackShape(scriptStderr(s.body)).trim(), `stderr${context}`);
        }
      } else if (s.value !== null && mine) {
        assert.equal(mine.value, s.value, `${s.name}${context}`);
      }
    }
  }

  test('every flag of the Python server is accepted, and a repeated one keeps its last value', () => {
    const flags = (text) => [...new Set(text.match(/--[a-z][a-z0-9-]+/g))].sort();
    const theirsFlags = flags(execFileSync(pythonServer, ['--help'], { encoding: 'utf8' }));
    const oursFlags = flags(execFileSync(serverPath, ['--help'], { encoding: 'utf8' }));
    assert.ok(theirsFlags.length >= 7, theirsFlags.join(' '));
    for (const f of theirsFlags) assert.ok(oursFlags.includes(f), `${f} is accepted`);
    // argparse: the last one wins; neither refuses it.
    for (const server of [pythonServer, serverPath]) {
      execFileSync(server, ['--python-version', '3.11', '--python-version', '3.12', '--max-timeout', '5',
        '--max-timeout', '9', '--help'], { encoding: 'utf8' });
    }
  });

  // What this server adds: the session tools (issue 17) and, on execute_python, python_version,
  // session_id and files in and out; everything of the Python server's stays as it is.
  const OUR_EXTRA_TOOLS = ['close_session', 'create_session', 'fork_session', 'list_sessions', 'reset_session'];
  const OUR_EXTRA_PARAMS = ['input_files', 'output_files', 'python_version', 'session_id'];

  test('the same tools with the same parameters (this server adds sessions, python_version, files)', async () => {
    const [a, b] = await Promise.all([theirs.client.listTools(), ours.client.listTools()]);
    const shape = (r) => Object.fromEntries(r.tools.map((t) => [t.name, Object.keys(t.inputSchema.properties ?? {}).sort()]));
    const t = shape(a);
    const o = shape(b);
    assert.deepEqual(Object.keys(o).filter((n) => !OUR_EXTRA_TOOLS.includes(n)).sort(), Object.keys(t).sort());
    assert.deepEqual(Object.keys(o).filter((n) => OUR_EXTRA_TOOLS.includes(n)).sort(), OUR_EXTRA_TOOLS);
    for (const [name, params] of Object.entries(t)) {
      assert.deepEqual(o[name].filter((p) => !OUR_EXTRA_PARAMS.includes(p)), params, name);
      const required = (r) => (r.tools.find((x) => x.name === name).inputSchema.required ?? []).sort();
      assert.deepEqual(required(b), required(a), `${name}: required parameters`);
    }
  });

  test('check_environment: the same nine lines first', async () => {
    const r = await both('check_environment', {});
    const t = r.theirsText.split('\n');
    const o = r.oursText.split('\n').slice(0, 9);
    const context = `\n--- Python server:\n${r.theirsText}\n--- this server:\n${o.join('\n')}`;
    assert.equal(t.length, 9, context);
    assert.deepEqual(o.map((l) => l.split(':')[0]), t.map((l) => l.split(':')[0]), context);
    // Equal values, except the Python version (this server names the patch release it found),
    // the backend (see before()) and its status.
    for (const label of ['uv', 'Platform', 'Default timeout', 'Max timeout', 'Max output', 'Cache warming']) {
      assert.equal(o.find((l) => l.startsWith(`${label}:`)), t.find((l) => l.startsWith(`${label}:`)), `${label}${context}`);
    }
    assert.ok(o[0].startsWith(t[0]), `"${o[0]}" names the release of "${t[0]}"`);
  });

  test('print', async () => compareRun(await both('execute_python', { script: "print('hello')" })));

  test('sys.exit(42) with stdout and stderr split', async () => {
    compareRun(await both('execute_python', {
      script: "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(42)",
    }));
  });

  test('an exception: the traceback on stderr, exit code 1', async () => {
    compareRun(await both('execute_python', { script: "def f():\n    raise ValueError('boom')\nf()\n" }));
  });

  test('an empty script', async () => compareRun(await both('execute_python', { script: '' })));

  test('a timeout: exit -9 and timed_out (this server also keeps what was printed)', async () => {
    // The Python server kills uv at the deadline but then waits for the script, which still holds
    // the pipes: its answer comes when the sleep ends.
    const r = await both('execute_python', {
      script: "import time\nprint('start', flush=True)\ntime.sleep(4)", timeout_seconds: 1,
    });
    compareRun(r, { allow: ['stdout'] });
    assert.match(r.oursText, /--- stdout ---\nstart\n/);
  });

  test('dependencies from the parameter', async () => {
    compareRun(await both('execute_python', {
      script: 'import six\nprint(six.__version__)', dependencies: ['six==1.16.0'],
    }));
  });

  test('dependencies from the inline block: the README\'s pandas example', async () => {
    compareRun(await both('execute_python', {
      script: '# /// script\n# dependencies = ["pandas>=2.2", "numpy>=1.26"]\n# ///\n\n' +
        'import pandas as pd\nimport numpy as np\nprint(pd.DataFrame({"a": np.arange(5)}).describe())\n',
    }));
  });

  test('a dependency that does not exist: exit code 1, uv\'s "No solution found"', async () => {
    compareRun(await both('execute_python', { script: 'print(1)', dependencies: ['mpes-no-such-package-zz'] }),
      { allow: ['install error text'] });
  });

  test('validate_script: valid scripts give the same text', async () => {
    for (const args of [
      { script: '# /// script\n# dependencies = ["requests>=2"]\n# ///\nimport requests', dependencies: ['rich'] },
      { script: 'print(1)' },
      { script: '# /// script\n# requires-python = ">=3.9"\n# dependencies = []\n# ///\n' },
    ]) {
      const r = await both('validate_script', args);
      assert.equal(r.oursText, r.theirsText, JSON.stringify(args));
    }
  });

  test('validate_script: malformed metadata is INVALID on both', async () => {
    const r = await both('validate_script', { script: '# /// script\n# dependencies = [\n# ///\n' });
    assert.match(r.theirsText, /^INVALID: /);
    assert.match(r.oursText, /^INVALID: /);
  });
});
