// The real tools the e2e tests drive next to the server: uv, the default installer of dependency
// environments, found as a user's uv is found.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const UV_LOCK = path.resolve(here, '../requirements-uv.txt');

function onPath(name, pathVar = process.env.PATH ?? '') {
  for (const dir of pathVar.split(':')) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch { /* next */ }
  }
  return null;
}

function pinnedVersion() {
  const m = fs.readFileSync(UV_LOCK, 'utf8').match(/^uv==(\S+)/m);
  return m ? m[1] : null;
}

let cached;
// { bin, dir, how } for uv: on PATH; else the checkout's tools environment (.tools/venv/bin, made by
// scripts/install-deps.sh); else the same pin (requirements-uv.txt) installed by pip from the
// user's index into ~/.cache/mpes-e2e-tools (a copy of e2e_tests/ without the checkout's tools).
// null when none can be had (the reason in `uvUnavailable`).
export let uvUnavailable = '';
export function findUv() {
  if (cached !== undefined) return cached;
  const fromPath = onPath('uv');
  if (fromPath) return (cached = { bin: fromPath, dir: path.dirname(fromPath), how: 'PATH' });
  const tools = path.resolve(here, '../../.tools/venv/bin/uv');
  if (fs.existsSync(tools)) return (cached = { bin: tools, dir: path.dirname(tools), how: 'tools environment' });
  const version = pinnedVersion();
  const venv = path.join(os.homedir(), '.cache', 'mpes-e2e-tools', `uv-${version}`);
  const bin = path.join(venv, 'bin', 'uv');
  if (!fs.existsSync(bin)) {
    try {
      fs.rmSync(venv, { recursive: true, force: true });
      execFileSync('/usr/bin/python3', ['-m', 'venv', venv], { stdio: 'pipe' });
      execFileSync(path.join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check',
        '--no-deps', '--require-hashes', '-r', UV_LOCK], { stdio: 'pipe', timeout: 300000 });
    } catch (e) {
      uvUnavailable = `uv ${version} could not be installed into ${venv}: ${e.stderr?.toString() ?? e.message}`;
      return (cached = null);
    }
  }
  return (cached = { bin, dir: path.dirname(bin), how: 'pinned, installed by the tests' });
}

// A directory holding only uv (a link to it), as uv's own installer leaves it in ~/.local/bin: the
// tools environment's bin/ also has a python, which must not become the server's default.
let uvOnlyDir;
function uvOnly(uv) {
  if (uv.how === 'PATH') return uv.dir;
  if (!uvOnlyDir) {
    uvOnlyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpes-e2e-uv-bin-'));
    fs.chmodSync(uvOnlyDir, 0o755);
    fs.symlinkSync(uv.bin, path.join(uvOnlyDir, 'uv'));
    process.on('exit', () => fs.rmSync(uvOnlyDir, { recursive: true, force: true }));
  }
  return uvOnlyDir;
}

// The server's environment with uv found on PATH, as for a user who installed it.
export function envWithUv(uv, base = process.env) {
  return { ...base, PATH: `${uvOnly(uv)}:${base.PATH ?? '/usr/local/bin:/usr/bin:/bin'}` };
}

// How this user's uv trusts the index's certificate: their environment (SSL_CERT_FILE,
// UV_NATIVE_TLS, UV_SYSTEM_CERTS) or their uv.toml, passed through as it is. A user with none of
// these (a bare `env -i` login) whose CA is in the system store writes `native-tls = true` into
// their uv.toml; so does this file then, into a configuration directory of its own.
export function userEnv(base) {
  const env = { ...base };
  const home = env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config');
  const hasTls = env.SSL_CERT_FILE || env.UV_NATIVE_TLS || env.UV_SYSTEM_CERTS ||
    fs.existsSync(path.join(home, 'uv', 'uv.toml'));
  if (!hasTls) {
    const cacheRoot = path.join(os.homedir(), '.cache');
    fs.mkdirSync(cacheRoot, { recursive: true });
    const config = fs.mkdtempSync(path.join(cacheRoot, 'mpes-e2e-uvconfig-'));
    fs.chmodSync(config, 0o755);  // read by the unprivileged installer when the server is root
    fs.mkdirSync(path.join(config, 'uv'));
    fs.writeFileSync(path.join(config, 'uv', 'uv.toml'), 'native-tls = true\n');
    process.on('exit', () => fs.rmSync(config, { recursive: true, force: true }));
    env.XDG_CONFIG_HOME = config;
  }
  return env;
}
