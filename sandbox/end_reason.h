// How a run ended, decided from evidence rather than guessed from the exit code: the wait status
// of the run's main process, what the server did (deadline, cancel), the run's cgroup counters,
// its CPU time, and the uncaught Python exception if any. The engine maps RunEnd 1:1 onto
// engine::EndReason (sandbox does not depend on engine).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/cgroup.h"

namespace sandbox {

enum class RunEnd {
  exit, signal, timeout, memory_limit, cpu_limit, process_limit, file_size_limit, cancelled,
  sandbox_error
};
std::string_view to_string(RunEnd end);  // "exit", "memory_limit", ...

struct EndEvidence {
  int wait_status = 0;          // waitpid() status of the run's main process
  bool timed_out = false;       // the server killed the run at its deadline
  bool cancelled = false;       // killed on cancellation or shutdown
  bool sandbox_failed = false;  // setup failed before user code, or the zygote was lost
  std::optional<CgroupStats> cgroup;  // read after the run, before removing the cgroup
  std::int64_t cpu_time_ms = -1;      // user+sys of the run (rusage), -1 = unknown
  std::uint32_t cpu_limit_seconds = 0;  // the RLIMIT_CPU soft limit applied (0 = none)
  // Last line of an uncaught Python exception ("MemoryError", "OSError: [Errno 27] File too
  // large", ...); from the runner, or uncaught_exception_from_stderr().
  std::string uncaught_exception;
};

// Precedence: sandbox failure, cancel, timeout (the server's own kill), then a clean exit (0)
// is `exit` whatever counters say; otherwise the limit that explains the failure:
//   SIGXCPU, or SIGKILL with CPU time at the limit (RLIMIT_CPU's hard kill; a pid-namespace
//     init ignores SIGXCPU)                                   -> cpu_limit
//   SIGXFSZ, or an uncaught OSError errno 27 (EFBIG; Python ignores SIGXFSZ) -> file_size_limit
//   an OOM kill in the run's cgroup, or an uncaught *MemoryError -> memory_limit
//   a fork/clone refused by pids.max, or an uncaught BlockingIOError errno 11 / "can't start
//     new thread" (EAGAIN under RLIMIT_NPROC)                -> process_limit
//   any other signal -> signal; any other exit code -> exit.
RunEnd classify_end(const EndEvidence& evidence);

// The final "Type: message" line of the last traceback in `stderr_text` ("" when stderr does not
// end with an uncaught exception). Works on a head+tail truncated stream (the tail is kept).
std::string uncaught_exception_from_stderr(std::string_view stderr_text);

}  // namespace sandbox
