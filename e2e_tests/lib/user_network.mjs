// Whether this server may start a user-mode network (sandbox/user_network.h): pasta's tap device
// is needed, which an unprivileged server can open only where /dev/net/tun is open to its user
// (udev's default mode 0666).
import fs from 'node:fs';

export function tunOpen() {
  try {
    fs.accessSync('/dev/net/tun', fs.constants.R_OK | fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export const canUserMode = () => process.getuid() === 0 || tunOpen();
