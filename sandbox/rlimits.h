// Resource limits applied in the run's child (RLIMIT_*): file size, open files, core dumps off,
// CPU time, and process count where no pids cgroup enforces it.
#pragma once

#include "sandbox/policy.h"

namespace sandbox {

// Throws SetupError. `wall_timeout_seconds` is the CPU limit when limits.cpu_seconds == 0.
void apply_rlimits(const Limits& limits, unsigned wall_timeout_seconds);

}  // namespace sandbox
