// The server under test on the Streamable HTTP transport: started on a free port (--port 0, the
// port read from its "listening on" log line), stopped with SIGTERM.
import { spawn } from 'node:child_process';
import { serverPath } from './client.mjs';

export async function startHttpServer(args = [], { env, timeoutMs = 20000 } = {}) {
  const child = spawn(serverPath, ['--transport', 'http', '--port', '0', ...args], {
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
