// Proof that a run is alive: the run's script connects to a local TCP port every 100 ms (runs
// share the host's network with --network on); after a run is killed the beats stop.
import net from 'node:net';

export async function startHeartbeat() {
  let beats = 0;
  const server = net.createServer((socket) => { beats += 1; socket.destroy(); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    get beats() { return beats; },
    // A script that beats every 100 ms for `seconds`, then prints "done".
    script(seconds = 60) {
      return [
        'import socket, time',
        `end = time.time() + ${seconds}`,
        'while time.time() < end:',
        '    try:',
        `        socket.create_connection(("127.0.0.1", ${port}), timeout=1).close()`,
        '    except OSError:',
        '        pass',
        '    time.sleep(0.1)',
        'print("done")',
      ].join('\n');
    },
    async waitForBeat(timeoutMs = 30000) {
      const start = beats;
      const deadline = Date.now() + timeoutMs;
      while (beats === start && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (beats === start) throw new Error('the run never started beating');
    },
    // True when no beat arrives for `quietMs` after `graceMs` (the run is gone).
    async stopped(graceMs = 1500, quietMs = 1500) {
      await new Promise((r) => setTimeout(r, graceMs));
      const before = beats;
      await new Promise((r) => setTimeout(r, quietMs));
      return beats === before;
    },
    close() { server.close(); },
  };
}
