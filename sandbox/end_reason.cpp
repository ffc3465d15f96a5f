#include "sandbox/end_reason.h"

#include <sys/wait.h>

#include <csignal>

namespace sandbox {
namespace {

std::string_view exception_type(std::string_view line) {
  return line.substr(0, line.find(':'));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool is_memory_error(std::string_view exc) {
  // MemoryError and subclasses such as numpy's _ArrayMemoryError.
  return ends_with(exception_type(exc), "MemoryError");
}

bool is_process_limit_error(std::string_view exc) {
  const auto type = exception_type(exc);
  return (ends_with(type, "BlockingIOError") && contains(exc, "[Errno 11]")) ||
         contains(exc, "can't start new thread");
}

bool valid_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.';
}

}  // namespace

std::string_view to_string(RunEnd end) {
  switch (end) {
    case RunEnd::exit: return "exit";
    case RunEnd::signal: return "signal";
    case RunEnd::timeout: return "timeout";
    case RunEnd::memory_limit: return "memory_limit";
    case RunEnd::cpu_limit: return "cpu_limit";
    case RunEnd::process_limit: return "process_limit";
    case RunEnd::file_size_limit: return "file_size_limit";
    case RunEnd::cancelled: return "cancelled";
    case RunEnd::sandbox_error: return "sandbox_error";
  }
  return "exit";
}

RunEnd classify_end(const EndEvidence& e) {
  if (e.sandbox_failed) return RunEnd::sandbox_error;
  if (e.cancelled) return RunEnd::cancelled;
  if (e.timed_out) return RunEnd::timeout;
  const int status = e.wait_status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return RunEnd::exit;

  const CgroupStats cg = e.cgroup.value_or(CgroupStats{});
  const std::string_view exc = e.uncaught_exception;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU) return RunEnd::cpu_limit;
    if (sig == SIGXFSZ) return RunEnd::file_size_limit;
    if (sig == SIGKILL) {
      if (cg.oom_kills > 0) return RunEnd::memory_limit;
      if (e.cpu_limit_seconds > 0 && e.cpu_time_ms >= 0 &&
          e.cpu_time_ms >= static_cast<std::int64_t>(e.cpu_limit_seconds) * 1000) {
        return RunEnd::cpu_limit;
      }
    }
    return RunEnd::signal;
  }
  if (cg.oom_kills > 0) return RunEnd::memory_limit;
  if (!e.memory_counted) {
    const bool near_limit = e.memory_limit_bytes > 0 && e.peak_rss_bytes >= 0 &&
                            static_cast<std::uint64_t>(e.peak_rss_bytes) * 10 >= e.memory_limit_bytes * 9;
    if (near_limit || is_memory_error(exc)) return RunEnd::memory_limit;
  }
  if (cg.pids_limit_hits > 0) return RunEnd::process_limit;
  if (!e.processes_counted && is_process_limit_error(exc)) return RunEnd::process_limit;
  return RunEnd::exit;
}

std::string uncaught_exception_from_stderr(std::string_view text) {
  // Last non-empty line.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  const auto start = text.rfind('\n');
  std::string_view last = start == std::string_view::npos ? text : text.substr(start + 1);
  if (last.empty() || last.front() == ' ') return "";  // a traceback frame line, not the error
  // "Type" or "Type: message", Type a dotted identifier.
  const std::string_view type = exception_type(last);
  if (type.empty() || type.size() > 200) return "";
  for (char c : type) {
    if (!valid_identifier_char(c)) return "";
  }
  if (type.size() != last.size() && last.substr(type.size(), 2) != ": ") return "";
  // Only a real traceback counts, not a script that prints "Error: x" to stderr at the end.
  if (!contains(text, "Traceback (most recent call last):")) return "";
  return std::string(last);
}

}  // namespace sandbox
