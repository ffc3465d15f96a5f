// The official MCP Inspector in CLI mode against the built server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverPath } from './lib/client.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

async function inspector(...args) {
  const { stdout } = await run('npx', ['--no-install', 'mcp-inspector', '--cli', serverPath, ...args],
    { cwd: here, timeout: 60000, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout);
}

test('inspector --cli lists the tools', async () => {
  const result = await inspector('--method', 'tools/list');
  assert.deepEqual(result.tools.map((t) => t.name).sort(), ['check_environment', 'close_session', 'create_session', 'execute_python', 'fork_session', 'list_sessions',
    'reset_session', 'validate_script']);
});

test('inspector --cli calls validate_script', async () => {
  const result = await inspector('--method', 'tools/call', '--tool-name', 'validate_script',
    '--tool-arg', 'script=print(42)');
  assert.match(result.content[0].text, /^VALID\nrequires-python: >=3\.\d+\ndependencies: none$/);
  assert.equal(result.structuredContent.valid, true);
});
