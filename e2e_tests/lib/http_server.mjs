// The server under test on the Streamable HTTP transport: started on a free port (--port 0, the
// port read from its "listening on" log line), stopped with SIGTERM. `prefix`: a command that
// execs the server (e.g. ['prlimit', '--nofile=256:4096']), so that its pid is the server's.
import { spawn } from 'node:child_process';
import { serverPath } from './client.mjs';

export async function startHttpServer(args = [], { env, timeoutMs = 20000, prefix = [] } = {}) {
  const argv = [...prefix, serverPath, '--transport', 'http', '--port', '0', ...args];
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(env ?? {}) },
  });
  let stderr = '';
  let stdout = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line within ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /listening on http:\/\/[^ ]*?:(\d+)\/mcp/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stdout.on('data', (d) => { stdout += d; });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before listening:\n${stderr}`));
    });
  });
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
