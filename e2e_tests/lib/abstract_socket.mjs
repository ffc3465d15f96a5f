// A listener on a host abstract unix socket, for tests that check a sandbox cannot reach one.
// Served by Debian's python3: Node pads abstract names to the full address length, Python does not.
import { spawn } from 'node:child_process';

const SERVER = String.raw`
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0" + sys.argv[1].encode())
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"host abstract\n")
    c.close()
`;

// Starts it under `name` (without the leading NUL) and resolves with the child once it listens;
// the caller kills it. Every connection is answered "host abstract\n".
export async function startAbstractListener(python, name) {
  const child = spawn(python, ['-I', '-c', SERVER, name], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', reject);
  });
  return child;
}
