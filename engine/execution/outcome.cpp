#include "engine/execution/outcome.h"

#include <sys/wait.h>

#include <algorithm>
#include <utility>

#include "engine/execution/output_capture.h"
#include "sandbox/end_reason.h"

namespace engine {

namespace {

EndReason to_end_reason(sandbox::RunEnd end) {
  switch (end) {
    case sandbox::RunEnd::exit: return EndReason::exit;
    case sandbox::RunEnd::signal: return EndReason::signal;
    case sandbox::RunEnd::timeout: return EndReason::timeout;
    case sandbox::RunEnd::memory_limit: return EndReason::memory_limit;
    case sandbox::RunEnd::cpu_limit: return EndReason::cpu_limit;
    case sandbox::RunEnd::process_limit: return EndReason::process_limit;
    case sandbox::RunEnd::file_size_limit: return EndReason::file_size_limit;
    case sandbox::RunEnd::cancelled: return EndReason::cancelled;
    case sandbox::RunEnd::sandbox_error: return EndReason::sandbox_error;
  }
  return EndReason::exit;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return -WTERMSIG(wait_status);
  return -1;
}

}  // namespace

RunResult decide_outcome(RunEvidence evidence) {
  const bool per_process_memory =
      evidence.sandbox == "native" && !evidence.memory_counted && evidence.memory_limit_bytes > 0;
  RunResult result;
  result.stdout_stream = std::move(evidence.stdout_stream);
  result.stderr_stream = std::move(evidence.stderr_stream);
  result.sandbox = std::move(evidence.sandbox);
  result.python_version = std::move(evidence.python_version);
  result.execution_path = std::move(evidence.execution_path);
  result.duration_ms = evidence.dispatched ? evidence.duration_ms : 0;
  result.usage.wall_ms = result.duration_ms;

  sandbox::EndEvidence end;
  end.timed_out = evidence.timed_out;
  end.cancelled = evidence.cancelled;
  end.cgroup = evidence.cgroup;
  if (evidence.exited) {
    const auto& ex = *evidence.exited;
    end.wait_status = ex.wait_status;
    result.usage.cpu_ms = (ex.user_cpu_us + ex.system_cpu_us) / 1000;
    result.usage.peak_memory_bytes = ex.max_rss_kb * 1024;
    if ((ex.flags & zygote::kExitSetupFailed) != 0 && !evidence.service_error) {
      evidence.service_error = "sandbox setup failed: " + ex.detail;
    }
  }
  if (evidence.killed_tree_cpu_us >= 0) {
    result.usage.cpu_ms = std::max(result.usage.cpu_ms, evidence.killed_tree_cpu_us / 1000);
  }
  if (const auto& stats = evidence.cgroup) {
    if (stats->memory_peak_bytes > 0) result.usage.peak_memory_bytes = stats->memory_peak_bytes;
    // The cgroup counts every process of the run, also those killed rather than reaped, and
    // not the run child's preparation before it joined (which its rusage includes).
    if (stats->cpu_usage_us >= 0) result.usage.cpu_ms = stats->cpu_usage_us / 1000;
  }
  end.cpu_time_ms = result.usage.cpu_ms;
  end.cpu_limit_seconds = evidence.cpu_limit_seconds;
  end.memory_counted = evidence.memory_counted;
  end.processes_counted = evidence.processes_counted;
  end.memory_limit_bytes = evidence.memory_limit_bytes;
  if (evidence.exited) end.peak_rss_bytes = evidence.exited->max_rss_kb * 1024;
  end.uncaught_exception = sandbox::uncaught_exception_from_stderr(result.stderr_stream.text);
  end.sandbox_failed = evidence.service_error.has_value();

  if (evidence.install_error && !evidence.service_error) {
    // Not a service failure: the requirements cannot be installed (as `uv run` would report).
    result.exit_code = 1;
    result.end_reason = EndReason::install_failed;
    result.stderr_stream = OutputCapture::capture(*evidence.install_error, evidence.max_output_bytes);
  } else if (evidence.service_error) {
    result.service_error = std::move(evidence.service_error);
    result.exit_code = -1;
    result.end_reason = evidence.cancelled ? EndReason::cancelled
                        : evidence.refused ? EndReason::refused
                                           : EndReason::sandbox_error;
  } else if (evidence.timed_out) {
    result.exit_code = -9;
    result.timed_out = true;
    result.end_reason = EndReason::timeout;
  } else if (evidence.cancelled && !evidence.exited) {
    result.exit_code = -9;
    result.end_reason = EndReason::cancelled;
  } else if (evidence.exited) {
    result.exit_code = exit_code_of(evidence.exited->wait_status);
    result.end_reason = to_end_reason(sandbox::classify_end(end));
    result.return_value_repr = std::move(evidence.rich.value_repr);
    result.return_value_json = std::move(evidence.rich.value_json);
    result.images = std::move(evidence.rich.images);
    result.notes = std::move(evidence.rich.notes);
    result.files = std::move(evidence.rich.files);
  } else {
    result.exit_code = -1;
    result.end_reason = EndReason::sandbox_error;
  }
  // Without a writable cgroup the memory limit is RLIMIT_DATA, which bounds each process's
  // private memory alone: every result says so, since the tool's description cannot know the host.
  if (!result.service_error && per_process_memory) {
    result.notes.push_back("the memory limit (" + std::to_string(evidence.memory_limit_bytes >> 20) +
                           " MiB) is per process and counts only its private memory: this host gives the "
                           "server no writable cgroup, so the run's processes together, and shared memory "
                           "(mmap.mmap(-1, n), memfd, SysV segments), may use more");
  }
  return result;
}

}  // namespace engine
