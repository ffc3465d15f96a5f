// Both MCP eras on stdio, with real runs: a 2026-07-28 client never sends initialize and puts its
// protocol version in every request's _meta; a legacy client's discovery probe falls back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawServer } from './lib/raw_server.mjs';
import { startHeartbeat } from './lib/heartbeat.mjs';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'e2e-modern', version: '1' },
};
const request = (id, method, params = {}, meta = META) =>
  ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...meta, ...(params._meta ?? {}) } } });

test('a 2026-07-28 client: discover, list, run, without initialize', async () => {
  const s = new RawServer();
  await s.send(request('d', 'server/discover'));
  const discover = (await s.byId('d')).result;
  assert.equal(discover.resultType, 'complete');
  assert.equal(discover.supportedVersions[0], '2026-07-28');
  assert.ok(discover.supportedVersions.includes('2025-11-25'));
  assert.equal(discover._meta['io.modelcontextprotocol/serverInfo'].name, 'mcp-python-exec-sandbox');
  assert.ok(Number.isInteger(discover.ttlMs));

  await s.send(request('l', 'tools/list'));
  const list = (await s.byId('l')).result;
  assert.deepEqual(list.tools.map((t) => t.name), ['execute_python', 'validate_script', 'check_environment', 'create_session', 'fork_session', 'reset_session', 'close_session', 'list_sessions']);
  for (const tool of list.tools) {
    assert.equal(tool.inputSchema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  }
  assert.equal(list.cacheScope, 'public');

  await s.send(request('r', 'tools/call', { name: 'execute_python', arguments: { script: 'print(6 * 7)' } }));
  const run = (await s.byId('r', 30000)).result;
  assert.equal(run.resultType, 'complete');
  assert.equal(run._meta['io.modelcontextprotocol/serverInfo'].name, 'mcp-python-exec-sandbox');
  assert.equal(run.structuredContent.stdout, '42\n');
  assert.equal(run.structuredContent.exit_code, 0);
  // No logLevel was asked for: no notifications/message at all.
  assert.equal(s.messages.filter((m) => m.method === 'notifications/message').length, 0);
  assert.equal(await s.close(), 0);
});

test('stateless errors on stdio: missing _meta field, unsupported version, removed methods', async () => {
  const s = new RawServer();
  const noCaps = { ...META };
  delete noCaps['io.modelcontextprotocol/clientCapabilities'];
  await s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: noCaps } });
  assert.equal((await s.byId(1)).error.code, -32602);
  await s.send(request(2, 'tools/list', {}, { ...META, 'io.modelcontextprotocol/protocolVersion': '2030-01-01' }));
  const unsupported = (await s.byId(2)).error;
  assert.equal(unsupported.code, -32022);
  assert.equal(unsupported.data.requested, '2030-01-01');
  assert.ok(unsupported.data.supported.includes('2026-07-28'));
  await s.send(request(3, 'ping'));
  assert.equal((await s.byId(3)).error.code, -32601);
  assert.equal(await s.close(), 0);
});

test('both eras on one stdio process: a session and stateless requests side by side', async () => {
  const s = new RawServer();
  const init = await s.initialize('2025-11-25');
  assert.equal(init.result.protocolVersion, '2025-11-25');
  await s.send({ jsonrpc: '2.0', id: 'legacy', method: 'tools/call',
    params: { name: 'execute_python', arguments: { script: 'print("old")' } } });
  await s.send(request('modern', 'tools/call', { name: 'execute_python', arguments: { script: 'print("new")' } }));
  const legacy = (await s.byId('legacy', 30000)).result;
  const modern = (await s.byId('modern', 30000)).result;
  assert.equal(legacy.structuredContent.stdout, 'old\n');
  assert.equal('resultType' in legacy, false);
  assert.equal(modern.structuredContent.stdout, 'new\n');
  assert.equal(modern.resultType, 'complete');
  assert.equal(await s.close(), 0);
});

test('a stateless run cancelled with notifications/cancelled is killed, unanswered', async () => {
  const s = new RawServer();
  const heart = await startHeartbeat();
  await s.send(request('long', 'tools/call',
    { name: 'execute_python', arguments: { script: heart.script(), timeout_seconds: 120 } }));
  await heart.waitForBeat();
  await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long' } });
  assert.ok(await heart.stopped(), 'the run kept running after its cancellation');
  await s.send(request('after', 'server/discover'));
  assert.equal((await s.byId('after')).result.resultType, 'complete');
  await assert.rejects(s.byId('long', 500));
  heart.close();
  assert.equal(await s.close(), 0);
});
