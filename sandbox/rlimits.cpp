#include "sandbox/rlimits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/setup_error.h"

namespace sandbox {
namespace {

void set_limit(int resource, const char* name, rlim_t soft, rlim_t hard) {
  const rlimit want{soft, hard};
  if (setrlimit(resource, &want) == 0) return;
  const int err = errno;
  // Lowering a limit never needs privilege, so a failure means the current hard limit is already
  // below what we asked for: keep that lower hard limit rather than fail the run.
  rlimit current{};
  if (err == EPERM && getrlimit(resource, &current) == 0 && current.rlim_max < hard) {
    const rlimit lowered{soft < current.rlim_max ? soft : current.rlim_max, current.rlim_max};
    if (setrlimit(resource, &lowered) == 0) return;
  }
  throw SetupError(std::string("sandbox: setrlimit(") + name + ") failed: " + std::strerror(err));
}

}  // namespace

void apply_rlimits(const Limits& limits, unsigned wall_timeout_seconds) {
  apply_rlimits(limits, wall_timeout_seconds, RlimitFallbacks{});
}

void apply_rlimits(const Limits& limits, unsigned wall_timeout_seconds,
                   const RlimitFallbacks& fallbacks) {
  set_limit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0);
  if (limits.file_size_bytes > 0) {
    set_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", limits.file_size_bytes, limits.file_size_bytes);
  }
  if (limits.open_files > 0) {
    set_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", limits.open_files, limits.open_files + kRunnerReserveFds);
  }
  const unsigned cpu = limits.cpu_seconds > 0 ? limits.cpu_seconds : wall_timeout_seconds;
  if (cpu > 0) {
    // SIGXCPU at the soft limit (classified as cpu_limit); SIGKILL one second later in case
    // the script ignores SIGXCPU.
    set_limit(RLIMIT_CPU, "RLIMIT_CPU", cpu, static_cast<rlim_t>(cpu) + 1);
  }
  if (fallbacks.processes && limits.max_processes > 0) {
    // Counted per (user namespace, uid) since Linux 5.14, so with a user namespace per run it
    // bounds this run only.
    set_limit(RLIMIT_NPROC, "RLIMIT_NPROC", limits.max_processes, limits.max_processes);
  }
  if (fallbacks.memory && limits.memory_bytes > 0) {
    // Per process, and counts only data/heap/private writable mappings: unlike RLIMIT_AS it
    // does not count numpy's or glibc's untouched address-space reservations.
    set_limit(RLIMIT_DATA, "RLIMIT_DATA", limits.memory_bytes, limits.memory_bytes);
  }
}

}  // namespace sandbox
