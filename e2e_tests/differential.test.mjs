// Differential suite: every script of e2e_tests/corpus/ runs under plain python3 (the server's own
// interpreter, the packages it has, a clean environment as the server's runs get one, a fresh
// work dir as cwd, stdin /dev/null) and through the server, once on the default zygote and once
// with the script's packages declared (the warm environment path: a zygote that imported them).
// stdout, stderr and the exit code must be the same, byte for byte, after normalising only what
// cannot be equal: the path of the work dir (a fresh temporary dir for python3) and the script's
// own file name (python3 names the file by its absolute path, the server "script.py").
//
// A script's first comment lines may say:
//   # packages: numpy pandas      distributions declared for the warm pass (no warm pass without)
//   # requires: polars            modules the host must have, else the script is skipped (visibly)
//   # timeout: 60                 seconds (default 60)
// Intended differences (README, "Differences from python3") are not in the corpus.
//
// MPES_DIFF_ONLY=REGEX runs the scripts whose file name matches; MPES_DIFF_VERBOSE=1 prints each
// script's outputs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from './lib/client.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const corpusDir = path.join(here, 'corpus');
const SERVER_WORK_DIR = '/home/sandbox';  // the native sandbox's work dir (sandbox/mounts.h)
const UNPRIVILEGED = 65534;  // python3 runs as nobody when the suite runs as root, as runs never have root

function loadCorpus() {
  const only = process.env.MPES_DIFF_ONLY ? new RegExp(process.env.MPES_DIFF_ONLY) : null;
  return fs.readdirSync(corpusDir).filter((f) => f.endsWith('.py')).sort()
    .filter((f) => !only || only.test(f))
    .map((file) => {
      const source = fs.readFileSync(path.join(corpusDir, file), 'utf8');
      const meta = { file, source, packages: [], requires: [], timeout: 60 };
      for (const line of source.split('\n')) {
        if (!line.startsWith('#')) break;
        const m = line.match(/^#\s*(packages|requires|timeout):\s*(.*)$/);
        if (!m) continue;
        if (m[1] === 'timeout') meta.timeout = Number(m[2]);
        else meta[m[1]] = m[2].split(/[\s,]+/).filter(Boolean);
      }
      return meta;
    });
}

// Bytes as the server turns them into text: valid UTF-8 kept, each byte of an invalid sequence
// replaced by U+FFFD (engine/execution/output_capture.cpp).
function sanitizeUtf8(buffer) {
  let out = '';
  let i = 0;
  const n = buffer.length;
  const cont = (k) => k < n && (buffer[k] & 0xc0) === 0x80;
  while (i < n) {
    const b = buffer[i];
    let len = 0;
    if (b < 0x80) len = 1;
    else if (b >= 0xc2 && b <= 0xdf && cont(i + 1)) len = 2;
    else if (b >= 0xe0 && b <= 0xef && cont(i + 1) && cont(i + 2)) {
      const b1 = buffer[i + 1];
      if (!(b === 0xe0 && b1 < 0xa0) && !(b === 0xed && b1 >= 0xa0)) len = 3;
    } else if (b >= 0xf0 && b <= 0xf4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      const b1 = buffer[i + 1];
      if (!(b === 0xf0 && b1 < 0x90) && !(b === 0xf4 && b1 >= 0x90)) len = 4;
    }
    if (len === 0) {
      out += '\ufffd';
      i += 1;
    } else {
      out += buffer.subarray(i, i + len).toString('utf8');
      i += len;
    }
  }
  return out;
}

function replaceAll(text, from, to) {
  return from ? text.split(from).join(to) : text;
}

// What the two sides cannot share: the work dir's path, how the script's file is named, and
// object addresses (which differ between two python3 runs too).
function normalise(text, workDir) {
  text = replaceAll(text, `${workDir}/script.py`, 'script.py');
  text = replaceAll(text, workDir, '<work>');
  return text.replace(/ at 0x[0-9a-f]+/g, ' at 0x?');
}

// The modules a distribution's import names are, for the corpus's packages.
const IMPORT_NAMES = { 'scikit-learn': 'sklearn', beautifulsoup4: 'bs4' };

// Runs `python script.py` the way the server runs a script, minus the sandbox.
function runReference(python, envTemplate, script, timeoutSeconds) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-diff-'));
  fs.writeFileSync(path.join(dir, 'script.py'), script);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    fs.chownSync(dir, UNPRIVILEGED, UNPRIVILEGED);
    fs.chownSync(path.join(dir, 'script.py'), UNPRIVILEGED, UNPRIVILEGED);
  }
  const env = { ...envTemplate, HOME: dir, TMPDIR: dir };
  return new Promise((resolve) => {
    const child = spawn(python, ['script.py'], {
      cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
      ...(asRoot ? { uid: UNPRIVILEGED, gid: UNPRIVILEGED } : {}),
    });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    let status = null;
    const killGroup = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
    const timer = setTimeout(killGroup, timeoutSeconds * 1000);
    // As the server does at a run's end: what the script left running is killed.
    child.on('exit', (code, signal) => {
      status = code ?? -os.constants.signals[signal];
      clearTimeout(timer);
      killGroup();
    });
    child.on('close', () => {
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({
        stdout: normalise(sanitizeUtf8(Buffer.concat(out)), dir),
        stderr: normalise(sanitizeUtf8(Buffer.concat(err)), dir),
        exit_code: status,
      });
    });
  });
}

async function runServer(client, script, timeoutSeconds, dependencies) {
  const args = { script, timeout_seconds: timeoutSeconds };
  if (dependencies) args.dependencies = dependencies;
  const result = await client.callTool({ name: 'execute_python', arguments: args }, undefined,
    { timeout: (timeoutSeconds + 240) * 1000 });
  const sc = result.structuredContent ?? {};
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  if (result.isError || sc.exit_code === undefined) {
    return { stdout: '', stderr: `SERVER ERROR: ${text}`, exit_code: null };
  }
  return {
    stdout: normalise(sc.stdout, SERVER_WORK_DIR),
    stderr: normalise(sc.stderr, SERVER_WORK_DIR),
    exit_code: sc.exit_code,
    truncated: (sc.stdout_truncated ?? 0) + (sc.stderr_truncated ?? 0),
    timed_out: sc.timed_out,
  };
}

// Runs `fn` over `items`, `limit` at a time.
async function pool(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  });
  await Promise.all(workers);
  return results;
}

// A readable account of how `got` differs from `want`.
function describeDifference(want, got) {
  const lines = [];
  for (const key of ['exit_code', 'stdout', 'stderr']) {
    if (want[key] === got[key]) continue;
    if (key === 'exit_code') {
      lines.push(`  exit_code: python3 ${want.exit_code}, server ${got.exit_code}`);
      continue;
    }
    const a = want[key].split('\n');
    const b = got[key].split('\n');
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    lines.push(`  ${key} differs at line ${i + 1}:`);
    lines.push(`    python3: ${JSON.stringify(a.slice(i, i + 3).join('\n'))}`);
    lines.push(`    server : ${JSON.stringify(b.slice(i, i + 3).join('\n'))}`);
  }
  if (got.truncated) lines.push(`  (the server truncated ${got.truncated} bytes)`);
  return lines.join('\n');
}

function hostHasModules(python, modules) {
  if (modules.length === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const child = spawn(python, ['-c', `import ${modules.join(', ')}`], { stdio: 'ignore' });
    child.on('exit', (code) => resolve(code === 0));
  });
}

describe('differential: python3 vs the server', { timeout: 1800000 }, () => {
  const corpus = loadCorpus();
  let conn;
  let python;
  let envTemplate;
  const reference = new Map();
  const skipped = new Map();

  before(async () => {
    // Room for every package set's warm zygote at once, so that none is evicted midway.
    conn = await connect(['--max-zygotes', '16']);
    // The interpreter and the environment of the server's runs, as the server reports them.
    const probe = await runServer(conn.client,
      'import json, os, sys\nprint(json.dumps({"python": sys.executable, "env": dict(os.environ)}))\n', 60);
    assert.equal(probe.exit_code, 0, probe.stderr);
    const info = JSON.parse(probe.stdout);
    python = info.python;
    envTemplate = info.env;
    for (const meta of corpus) {
      if (!(await hostHasModules(python, meta.requires))) {
        skipped.set(meta.file, `${meta.requires.join(', ')} not installed for ${python}`);
      }
    }
    const runnable = corpus.filter((m) => !skipped.has(m.file));
    const results = await pool(runnable, 2, (m) => runReference(python, envTemplate, m.source, m.timeout));
    runnable.forEach((m, i) => reference.set(m.file, results[i]));
  });

  after(async () => {
    await conn?.client.close();
  });

  test('the corpus has at least 150 scripts', () => {
    if (process.env.MPES_DIFF_ONLY) return;
    assert.ok(corpus.length >= 150, `${corpus.length} scripts`);
  });

  const check = async (t, label, pick) => {
    const chosen = corpus.filter(pick);
    for (const [file, why] of skipped) {
      if (chosen.some((m) => m.file === file)) t.diagnostic(`SKIPPED ${file}: ${why}`);
    }
    const runnable = chosen.filter((m) => !skipped.has(m.file));
    return runnable;
  };

  const compareAll = (t, runnable, results, pass) => {
    const failures = [];
    runnable.forEach((m, i) => {
      const want = reference.get(m.file);
      const got = results[i];
      if (process.env.MPES_DIFF_VERBOSE) {
        t.diagnostic(`${m.file} [${pass}]: ${JSON.stringify({ want, got })}`);
      }
      if (want.exit_code !== got.exit_code || want.stdout !== got.stdout || want.stderr !== got.stderr) {
        failures.push(`${m.file} (${pass}):\n${describeDifference(want, got)}`);
      }
    });
    assert.equal(failures.length, 0, `${failures.length} of ${runnable.length} scripts differ:\n\n${failures.join('\n\n')}`);
  };

  test('the default zygote gives what python3 gives', async (t) => {
    const runnable = await check(t, 'default', () => true);
    const results = await pool(runnable, 3, (m) => runServer(conn.client, m.source, m.timeout));
    compareAll(t, runnable, results, 'default zygote');
  });

  test("with the script's packages declared (warm environment) it is the same", async (t) => {
    const runnable = await check(t, 'warm', (m) => m.packages.length > 0);
    // One package set at a time: its zygote starts once and serves all of that set's scripts.
    const sets = new Map();
    runnable.forEach((m) => {
      const key = [...m.packages].sort().join(' ');
      if (!sets.has(key)) sets.set(key, []);
      sets.get(key).push(m);
    });
    const results = new Map();
    for (const [, scripts] of sets) {
      // The warm path really is taken: the zygote serving these packages has imported them.
      const modules = scripts[0].packages.map((p) => IMPORT_NAMES[p] ?? p);
      const probe = await runServer(conn.client,
        `import sys\nprint([m for m in ${JSON.stringify(modules)} if m not in sys.modules])\n`,
        120, scripts[0].packages);
      assert.equal(probe.stdout, '[]\n', `not preloaded for ${scripts[0].packages}: ${JSON.stringify(probe)}`);
      const got = await pool(scripts, 3, (m) => runServer(conn.client, m.source, m.timeout, m.packages));
      scripts.forEach((m, i) => results.set(m.file, got[i]));
    }
    compareAll(t, runnable, runnable.map((m) => results.get(m.file)), 'warm environment');
  });
});
