// Resource limits applied in the run's child (RLIMIT_*): file size, open files, core dumps off,
// CPU time, and process count where no pids cgroup enforces it.
#pragma once

#include "sandbox/policy.h"

namespace sandbox {

// RLIMIT_NOFILE's hard limit is this much above its soft one (limits.open_files): descriptors a
// session's process takes for itself between steps (the next step's fds, its spare's link),
// lowered back to the soft limit before a step's code runs. Without them, a state whose code
// holds every descriptor it may could never take another step.
inline constexpr unsigned kRunnerReserveFds = 16;

// Which limits no cgroup enforces on this host, so rlimits must stand in (see cgroup.h).
struct RlimitFallbacks {
  bool memory = true;     // RLIMIT_DATA = limits.memory_bytes (per process; never RLIMIT_AS)
  bool processes = true;  // RLIMIT_NPROC = limits.max_processes (per user namespace + uid)
};

// Throws SetupError. `wall_timeout_seconds` is the CPU limit when limits.cpu_seconds == 0.
// The two-argument form applies both fallbacks (fail closed when the caller does not know).
void apply_rlimits(const Limits& limits, unsigned wall_timeout_seconds);
void apply_rlimits(const Limits& limits, unsigned wall_timeout_seconds,
                   const RlimitFallbacks& fallbacks);

}  // namespace sandbox
