// How a run ended, as one pure function from what was observed to the RunResult the caller
// gets. Every rule of precedence lives here (and in sandbox::classify_end for the limit that
// explains a failed exit), so each can be unit-tested without a process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/execution/result_channel.h"
#include "engine/run.h"
#include "engine/zygote/protocol.h"
#include "sandbox/cgroup.h"

namespace engine {

// Everything known about a run when it is answered.
struct RunEvidence {
  // What the call asked for and what served it.
  std::string sandbox;          // "native", "none (unsandboxed)"
  std::string python_version;   // of the interpreter (the zygote's report when it has one)
  std::string execution_path;   // "zygote" or "spawn"
  std::size_t max_output_bytes = 102400;
  std::uint32_t cpu_limit_seconds = 0;  // RLIMIT_CPU as applied (the timeout when not set)
  std::uint64_t memory_limit_bytes = 0;  // --memory-limit-mb
  bool memory_counted = false;           // a cgroup enforced the memory limit (else RLIMIT_DATA)
  bool processes_counted = false;        // a cgroup enforced the process limit (else RLIMIT_NPROC)

  // Before the run: it never started when one of these is set.
  std::optional<std::string> install_error;  // the requirements cannot be installed
  std::optional<std::string> service_error;  // the service failed, or refused the request
  bool refused = false;                      // service_error is about the request, not us

  // The run itself.
  bool dispatched = false;       // it was sent to a zygote
  std::int64_t duration_ms = 0;  // from dispatch to its end (0 when never dispatched)
  bool timed_out = false;        // the server killed it at its deadline
  bool cancelled = false;        // killed or dropped on cancellation or shutdown
  std::optional<zygote::ExitedMessage> exited;  // the zygote's report of its end
  std::optional<sandbox::CgroupStats> cgroup;   // its cgroup's counters after the end
  // CPU of the run's process tree read just before the server killed it (-1: not killed, or
  // unknown): killed processes are never reaped by anyone who reports their usage.
  std::int64_t killed_tree_cpu_us = -1;
  CapturedStream stdout_stream;
  CapturedStream stderr_stream;
  RunnerResult rich;             // what the runner reported on the result channel (validated)
};

// Precedence, first that applies:
//   install_error (and no service error)  -> install_failed, exit 1, the installer's lines as stderr
//   service_error                         -> cancelled / refused / sandbox_error, exit -1, isError
//   timed_out                             -> timeout, exit -9
//   cancelled before the run reported     -> cancelled, exit -9
//   exited                                -> its wait status; the end reason from the evidence
//                                            (sandbox::classify_end), rich results attached
//   otherwise                             -> sandbox_error, exit -1
// A setup failure reported by the zygote (kExitSetupFailed) is a service error.
// CPU and peak memory come from the cgroup when it counted them, else from the zygote's rusage
// (and, for a killed run, the larger of that and its tree's CPU read before the kill).
RunResult decide_outcome(RunEvidence evidence);

}  // namespace engine
