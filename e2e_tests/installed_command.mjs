// One installed command, as a client config would start it (a package's command, not a build
// path), driven by the real MCP SDK client: hello, a dependency from the package index,
// check_environment, the package's version, and no Python left between client and server.
// Not part of `node --test .` (the name is not a test file's): scripts/test-packages.sh runs it
// once per way of installing, with
//   MPES_COMMAND          JSON array: the command and its leading arguments, e.g.
//                         ["/path/to/venv/bin/mcp-python-exec-sandbox"] or
//                         ["uvx", "--from", "dist/….whl", "mcp-python-exec-sandbox"]
//   MPES_EXPECT_VERSION   the package's version (CMakeLists.txt's project VERSION)
//   MPES_HELLO_ONLY=1     only the hello and the version (e.g. as an unprivileged user)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const command = JSON.parse(process.env.MPES_COMMAND ?? 'null');
assert.ok(Array.isArray(command) && command.length >= 1, 'MPES_COMMAND must be a JSON array (command, args...)');
const expectVersion = process.env.MPES_EXPECT_VERSION;
assert.ok(expectVersion, 'MPES_EXPECT_VERSION must name the package version');
const helloOnly = process.env.MPES_HELLO_ONLY === '1';

async function connect(args = []) {
  const transport = new StdioClientTransport({
    command: command[0],
    args: [...command.slice(1), ...args],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: 'mpes-installed', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

const textOf = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function run(client, script, extra = {}) {
  const result = await client.callTool(
    { name: 'execute_python', arguments: { script, ...extra } }, undefined,
    { timeout: 300000, resetTimeoutOnProgress: true });
  return { result, text: textOf(result), sc: result.structuredContent ?? {} };
}

// The process tree under `pid`, depth first: [{ pid, exe }], exe '' when unreadable. A child is
// listed under the thread that started it, so every thread's list is read.
function tree(pid) {
  const exe = (() => { try { return fs.readlinkSync(`/proc/${pid}/exe`); } catch { return ''; } })();
  const children = [];
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const list = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
      children.push(...list.trim().split(/\s+/).filter(Boolean).map(Number));
    }
  } catch { /* gone */ }
  return [{ pid, exe }, ...children.flatMap((c) => tree(c))];
}

test('--version prints the package version', () => {
  const out = execFileSync(command[0], [...command.slice(1), '--version'], { encoding: 'utf8' });
  assert.equal(out, `mcp-python-exec-sandbox ${expectVersion}\n`);
});

test('hello: the server is the binary itself, sandboxed, of the package version', async () => {
  const conn = await connect(['--no-warm-cache']);
  try {
    assert.deepEqual(conn.client.getServerVersion()?.name, 'mcp-python-exec-sandbox');
    assert.equal(conn.client.getServerVersion()?.version, expectVersion);
    const { result, text, sc } = await run(conn.client, "print('hello')");
    assert.equal(result.isError ?? false, false, text);
    assert.equal(sc.stdout, 'hello\n', text);
    assert.equal(sc.exit_code, 0, text);
    assert.equal(sc.sandbox, 'native', text);

    // From the process the client started down to the server, nothing is Python: the launcher
    // exec'd the server (same process) or a tool runner (uvx) started it directly.
    const procs = tree(conn.transport.pid);
    const server = procs.findIndex((p) => path.basename(p.exe) === 'mcp-python-exec-sandbox');
    assert.ok(server >= 0, `no server binary under the client's child: ${JSON.stringify(procs)}`);
    const above = procs.slice(0, server).filter((p) => /^python[0-9.]*$/.test(path.basename(p.exe)));
    assert.deepEqual(above, [], `Python between the client and the server: ${JSON.stringify(procs)}`);
    // The server runs with the signal dispositions of a direct start (Python ignores SIGXFSZ,
    // and an ignored signal stays ignored across exec).
    const status = fs.readFileSync(`/proc/${procs[server].pid}/status`, 'utf8');
    const ignored = BigInt(`0x${/^SigIgn:\s*([0-9a-f]+)/m.exec(status)[1]}`);
    assert.equal((ignored >> BigInt(os.constants.signals.SIGXFSZ - 1)) & 1n, 0n, `SigIgn ${ignored.toString(16)}`);
  } finally {
    await conn.client.close();
  }
});

test('a dependency from the package index is installed and imported', { skip: helloOnly }, async () => {
  // A cache of its own, so that this run really installs (where the default lives: ~/.cache).
  const parent = path.join(os.homedir(), '.cache');
  fs.mkdirSync(parent, { recursive: true });
  const cache = fs.mkdtempSync(path.join(parent, 'mpes-installed-'));
  fs.chmodSync(cache, 0o755);  // the installer runs unprivileged when the server is root
  const conn = await connect(['--no-warm-cache', '--cache-dir', cache]);
  try {
    const script = [
      '# /// script',
      '# dependencies = ["tomli-w==1.2.0"]',
      '# ///',
      'import tomli_w',
      'print(tomli_w.dumps({"answer": 42}), end="")',
    ].join('\n');
    const { result, text, sc } = await run(conn.client, script);
    assert.equal(result.isError ?? false, false, `${text}\n${conn.stderr()}`);
    assert.equal(sc.stdout, 'answer = 42\n', `${text}\n${conn.stderr()}`);
    assert.match(conn.stderr(), /installing 1 requirement\(s\) with (uv|pip)/);
  } finally {
    await conn.client.close();
    fs.rmSync(cache, { recursive: true, force: true });
  }
});

test('check_environment reports the native sandbox working', { skip: helloOnly }, async () => {
  const conn = await connect(['--no-warm-cache']);
  try {
    const result = await conn.client.callTool({ name: 'check_environment', arguments: {} });
    const text = textOf(result);
    const lines = text.split('\n');
    assert.match(lines[0], /^Python version: 3\.\d+\.\d+/, text);
    assert.equal(lines[3], 'Sandbox backend: native', text);
    const sc = result.structuredContent;
    assert.equal(sc.sandbox_backend, 'native');
    assert.doesNotMatch(sc.sandbox_status, /unavailable|not available|disabled|refused/i, text);
    assert.ok(sc.interpreters.length >= 1, text);
    assert.ok(sc.interpreters.some((it) => it.shared), `no interpreter with a shared libpython: ${text}`);
  } finally {
    await conn.client.close();
  }
});
