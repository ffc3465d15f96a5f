// The one place that applies the per-run sandbox layers, in this order:
//   user namespace maps -> loopback -> mounts       (prepare_run_namespace, in the run's init)
//     -> per-user quotas -> /proc/sys sealed
//   identity (session, caps, no_new_privs)          (prepare_run_process, in the script's
//     -> landlock scoping (a domain of its own)      process, before its run arrives)
//     -> seccomp
//   cgroup join -> rlimits                          (lock_down, in the script's process, once
//                                                    its run has arrived)
// seccomp is installed before the run arrives, not last: what follows it (receiving the run's fds,
// arranging them, the cgroup join through a passed fd, lowering rlimits) is all allowed by the
// filter, so the spare waits already confined and the run's critical path does not pay for it.
// A run is two processes: an init (pid 1 of the run's pid namespace, which only reaps and reports)
// and the script's process, so that the script is not a pid-namespace init (which would ignore its
// own fatal signals, e.g. os.kill(os.getpid(), SIGKILL)). Both are forked ahead of the run (a
// "spare"), so that namespaces, mounts and the fork itself leave the run's critical path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "sandbox/mounts.h"
#include "sandbox/policy.h"
#include "sandbox/rlimits.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/user_quotas.h"

namespace sandbox {

struct ChildSpec {
  bool isolate = true;   // native backend: namespaces, mounts, limits, seccomp; false = none
  // The run's clone made a network namespace of its own (its loopback is brought up).
  bool own_network = false;
  uid_t outside_uid = 0;  // the zygote's ids, onto which the run's ids are mapped
  gid_t outside_gid = 0;
  RunMountPlan mounts;
  Limits limits;
  RlimitFallbacks rlimit_fallbacks;
  UserQuotas user_quotas;  // the run's share of the host user's kernel quotas (user_quotas.h)
  unsigned timeout_seconds = 30;
  const SeccompProgram* seccomp = nullptr;  // compiled once in the zygote
  std::uint64_t landlock_scoped = 0;        // sandbox/landlock.h: the zygote's plan_run_scoping
  std::vector<int> cgroup_join_fds;         // cgroup.procs fds of the run's cgroups
};

// In the run's init, first thing after the clone into new namespaces. Throws SetupError.
void prepare_run_namespace(const ChildSpec& spec);
// In the script's process, right after its fork, before anything of a run. Throws SetupError.
void prepare_run_process(const ChildSpec& spec);
// In the script's process, right before user code (also unsandboxed: cgroups). Throws SetupError.
void lock_down(const ChildSpec& spec);

// Makes fd i of the process be wanted[i] (for i < wanted.size(); -1 = /dev/null) and closes
// every other fd. Safe between fork and user code; the results have no close-on-exec flag.
// Throws SetupError.
void arrange_fds(std::span<const int> wanted);
// The same without closing any other fd (what was at 0 .. wanted.size() - 1 is replaced; the
// sources stay open): a session's step keeps the files its earlier steps opened.
void place_fds(std::span<const int> wanted);

}  // namespace sandbox
