// Per-run namespaces, entered straight from the zygote by a fork-like clone (no second fork just
// to enter a pid namespace), and the user namespace maps the new child writes for itself.
#pragma once

#include <sys/types.h>

namespace sandbox {

// The ids a run has inside its user namespace: unprivileged, never root.
inline constexpr uid_t kRunUid = 1000;
inline constexpr gid_t kRunGid = 1000;

// user + pid + mount + ipc + uts + cgroup, and net when the run gets a network namespace of its own
// (--network off: loopback only; a network per run: linked by the server, sandbox/run_network.h).
unsigned long run_namespace_flags(bool own_network);

// Raw clone(2) without a new stack: returns twice like fork(). CLONE_PIDFD is added and the
// parent gets the child's pidfd (close-on-exec) in *pidfd. Returns -1 with errno on failure.
// The child must not rely on glibc's cached thread id (it calls no pthread functions on it).
pid_t clone_into(unsigned long namespace_flags, int* pidfd);

// In the new child: maps `inside` onto the ids it had outside (a single-id map, setgroups
// denied first as the kernel requires). Throws SetupError.
void write_id_maps(uid_t inside_uid, gid_t inside_gid, uid_t outside_uid, gid_t outside_gid);

// A fresh network namespace has loopback down; bring it up so localhost works. Throws SetupError.
void bring_up_loopback();

}  // namespace sandbox
