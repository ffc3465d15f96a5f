// Shared helpers for e2e tests: start the built server under the real MCP SDK client.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// MPES_SERVER points at the binary under test (scripts/test.sh sets it).
export const serverPath =
  process.env.MPES_SERVER ?? path.resolve(here, '../../build/mcp-python-exec-sandbox');

// MPES_SANDBOX_BACKEND=docker runs the suites on the docker backend (scripts/test.sh sets it for
// the docker pass); a test that names its own --sandbox-backend keeps it.
export const backend = process.env.MPES_SANDBOX_BACKEND ?? 'native';
export function withBackend(args) {
  return backend === 'native' || args.some((a) => a === '--sandbox-backend' || a.startsWith('--sandbox-backend='))
    ? args
    : ['--sandbox-backend', backend, ...args];
}

// connect(['--flag', 'value']) -> { client, transport, stderr() } ; close with client.close().
export async function connect(args = [], { env } = {}) {
  const transport = new StdioClientTransport({
    command: serverPath,
    args: withBackend(args),
    env: { ...process.env, ...(env ?? {}) },
    stderr: 'pipe',
  });
  let stderrText = '';
  transport.stderr?.on('data', (d) => { stderrText += d.toString(); });
  const client = new Client({ name: 'mpes-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderrText };
}

// Text of a tool result's content, joined.
export function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
