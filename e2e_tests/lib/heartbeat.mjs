// Proof that a run is alive, seen from outside without any channel into the sandbox: the run's
// script names its own process (/proc/self/comm) with a mark of its own, and sleeps; the test
// looks for a process of that name in the host's /proc. Once the run is killed, none is left.
// (Not the network: with --network on, runs cannot reach the host's loopback.)
import crypto from 'node:crypto';
import fs from 'node:fs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startHeartbeat() {
  const mark = `mpesbeat${crypto.randomBytes(3).toString('hex')}`;  // 14 characters, within comm's 15
  const running = () => fs.readdirSync('/proc').some((name) => {
    if (!/^\d+$/.test(name)) return false;
    try {
      return fs.readFileSync(`/proc/${name}/comm`, 'utf8').trim() === mark;
    } catch {
      return false;  // gone meanwhile
    }
  });
  return {
    // A script that names its process and sleeps for `seconds`, then prints "done".
    script(seconds = 60) {
      return [
        'import time',
        'with open("/proc/self/comm", "w") as f:',
        `    f.write("${mark}")`,
        `end = time.time() + ${seconds}`,
        'while time.time() < end:',
        '    time.sleep(0.1)',
        'print("done")',
      ].join('\n');
    },
    async waitForBeat(timeoutMs = 30000) {
      const deadline = Date.now() + timeoutMs;
      while (!running()) {
        if (Date.now() >= deadline) throw new Error('the run never started beating');
        await sleep(50);
      }
    },
    // True when no process of the run is left after `graceMs` and none comes back within `quietMs`.
    async stopped(graceMs = 1500, quietMs = 1500) {
      await sleep(graceMs);
      if (running()) return false;
      const deadline = Date.now() + quietMs;
      while (Date.now() < deadline) {
        if (running()) return false;
        await sleep(100);
      }
      return true;
    },
    close() {},
  };
}
