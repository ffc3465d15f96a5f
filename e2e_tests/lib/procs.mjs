// The process tree as /proc shows it, for tests that watch what the server leaves running.
import fs from 'node:fs';

// The parent of `pid`, or null when it is gone.
export function ppidOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

// Whether `pid` exists and is not a zombie.
export function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

// `root` and every live process below it, parents before children (siblings by pid).
export function tree(root) {
  const children = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = ppidOf(Number(name));
    if (parent === null) continue;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(Number(name));
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.shift();
    if (!alive(pid)) continue;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []).sort((a, b) => a - b));
  }
  return out;
}
