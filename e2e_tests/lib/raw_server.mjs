// A server under test driven with raw JSON-RPC lines through a plain child process (what SDK
// clients never send); asserts that stdout carries nothing but JSON-RPC messages.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after } from 'node:test';
import { serverPath } from './client.mjs';

// Servers a failed test left open (its assertion threw before close()) would keep the test
// file's process alive for ever: they are killed once the file's tests are done.
const open = new Set();
after(() => {
  for (const server of open) server.child.kill('SIGKILL');
});

export class RawServer {
  constructor(args = []) {
    this.child = spawn(serverPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.messages = [];
    this.waiters = [];
    this.stderr = '';
    open.add(this);
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => {
      open.delete(this);
      resolve(code);
    }));
    // A line's chunks are kept apart until its newline arrives: a reply of many MiB is not
    // searched again for each chunk.
    let parts = [];
    this.child.stdout.on('data', (chunk) => {
      let from = 0;
      let nl;
      while ((nl = chunk.indexOf(10, from)) >= 0) {
        parts.push(chunk.subarray(from, nl));
        const line = Buffer.concat(parts).toString('utf8');
        parts = [];
        from = nl + 1;
        // stdout carries nothing but JSON-RPC messages, one per line.
        const message = JSON.parse(line);
        assert.ok(Array.isArray(message) || message.jsonrpc === '2.0', `not JSON-RPC: ${line}`);
        this.messages.push(message);
        this.waiters = this.waiters.filter((w) => !w());
      }
      if (from < chunk.length) parts.push(chunk.subarray(from));
    });
    this.child.stderr.on('data', (d) => { this.stderr += d; });
  }

  send(message) {
    const line = typeof message === 'string' ? message : JSON.stringify(message);
    return new Promise((resolve) => this.child.stdin.write(line + '\n', resolve));
  }

  // Resolves with the first message (already received or future) matching `pred`.
  next(pred, timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const index = this.messages.findIndex(pred);
        if (index < 0) return false;
        clearTimeout(timer);
        resolve(this.messages.splice(index, 1)[0]);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(this.messages)}`));
      }, timeoutMs);
      if (!check()) this.waiters.push(check);
    });
  }

  byId(id, timeoutMs) { return this.next((m) => !Array.isArray(m) && m.id === id, timeoutMs); }

  async initialize(protocolVersion = '2025-06-18') {
    await this.send({ jsonrpc: '2.0', id: 'init', method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const response = await this.byId('init');
    await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return response;
  }

  async close() {
    this.child.stdin.end();
    return this.exited;
  }
}
