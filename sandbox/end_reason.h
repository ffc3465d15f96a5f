// How a run ended, decided from evidence the script cannot write: the wait status of the run's
// main process, what the server did (deadline, cancel), the run's cgroup counters, its CPU time
// and peak RSS as the kernel accounted them. The one exception: a limit enforced by an rlimit
// instead of a cgroup (the fallback when the server has no writable cgroup) leaves no kernel
// counter, so there the script's own uncaught exception is the only trace, and it is used.
// The engine maps RunEnd 1:1 onto engine::EndReason (sandbox does not depend on engine).
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
  // Which limits a cgroup enforced for this run: then only its counters can report them.
  bool memory_counted = false;     // memory.max / memory.limit_in_bytes
  bool processes_counted = false;  // pids.max
  std::uint64_t memory_limit_bytes = 0;  // the per-run (or, without a cgroup, per-process) limit
  std::int64_t peak_rss_bytes = -1;      // the largest RSS of a process of the run (rusage); -1 = unknown
  // Last line of an uncaught Python exception ("MemoryError", "BlockingIOError: [Errno 11] ...")
  // from uncaught_exception_from_stderr(): written by the script, so only consulted for a
  // limit that no cgroup counts.
  std::string uncaught_exception;
};

// Precedence: sandbox failure, cancel, timeout (the server's own kill), then a clean exit (0)
// is `exit` whatever counters say; otherwise the limit that explains the failure:
//   SIGXCPU, or SIGKILL with CPU time at the limit (RLIMIT_CPU's hard kill; a pid-namespace
//     init ignores SIGXCPU)                                   -> cpu_limit
//   SIGXFSZ                                                   -> file_size_limit
//     (Python ignores SIGXFSZ and raises OSError EFBIG instead, which only the script reports:
//     that is an `exit`)
//   an OOM kill in the run's cgroup; without a memory cgroup (RLIMIT_DATA, per process): a
//     peak RSS at >= 90% of the limit, or an uncaught *MemoryError
//                                                             -> memory_limit
//   (cgroup) a fork/clone refused by pids.max; without a pids cgroup (RLIMIT_NPROC): an uncaught
//     BlockingIOError errno 11 / "can't start new thread"    -> process_limit
//   any other signal -> signal; any other exit code -> exit.
RunEnd classify_end(const EndEvidence& evidence);

// The final "Type: message" line of the last traceback in `stderr_text` ("" when stderr does not
// end with an uncaught exception). Works on a head+tail truncated stream (the tail is kept).
std::string uncaught_exception_from_stderr(std::string_view stderr_text);

}  // namespace sandbox
