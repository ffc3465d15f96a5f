// End-reason classification from evidence, and the uncaught-exception parser.
#include <catch2/catch.hpp>

#include <signal.h>

#include "sandbox/end_reason.h"

using sandbox::classify_end;
using sandbox::EndEvidence;
using sandbox::RunEnd;

namespace {

int exited(int code) { return (code & 0xff) << 8; }
int killed(int sig) { return sig & 0x7f; }

EndEvidence ev(int status) {
  EndEvidence e;
  e.wait_status = status;
  return e;
}

}  // namespace

TEST_CASE("wait statuses decode as expected by the helpers", "[end_reason]") {
  CHECK(WIFEXITED(exited(3)));
  CHECK(WEXITSTATUS(exited(3)) == 3);
  CHECK(WIFSIGNALED(killed(SIGKILL)));
}

TEST_CASE("plain exits and signals", "[end_reason]") {
  CHECK(classify_end(ev(exited(0))) == RunEnd::exit);
  CHECK(classify_end(ev(exited(1))) == RunEnd::exit);
  CHECK(classify_end(ev(killed(SIGSEGV))) == RunEnd::signal);
  CHECK(classify_end(ev(killed(SIGKILL))) == RunEnd::signal);
}

TEST_CASE("what the server did comes first", "[end_reason]") {
  auto e = ev(killed(SIGKILL));
  e.timed_out = true;
  e.cgroup = sandbox::CgroupStats{};
  e.cgroup->oom_kills = 1;
  CHECK(classify_end(e) == RunEnd::timeout);
  e.cancelled = true;
  CHECK(classify_end(e) == RunEnd::cancelled);
  e.sandbox_failed = true;
  CHECK(classify_end(e) == RunEnd::sandbox_error);
}

TEST_CASE("a clean exit stays an exit whatever the counters say", "[end_reason]") {
  auto e = ev(exited(0));
  e.cgroup = sandbox::CgroupStats{};
  e.cgroup->oom_kills = 2;
  e.cgroup->pids_limit_hits = 5;
  CHECK(classify_end(e) == RunEnd::exit);
}

TEST_CASE("memory limit with a cgroup: only its OOM kills count", "[end_reason]") {
  auto oom = ev(killed(SIGKILL));
  oom.memory_counted = true;
  oom.cgroup = sandbox::CgroupStats{};
  oom.cgroup->oom_kills = 1;
  CHECK(classify_end(oom) == RunEnd::memory_limit);
  // A worker was OOM-killed and the script failed because of it.
  auto worker = ev(exited(1));
  worker.memory_counted = true;
  worker.cgroup = oom.cgroup;
  CHECK(classify_end(worker) == RunEnd::memory_limit);
  // A MemoryError traceback is the script's word, not evidence: a script can print one.
  auto forged = ev(exited(1));
  forged.memory_counted = true;
  forged.cgroup = sandbox::CgroupStats{};
  forged.uncaught_exception = "MemoryError";
  CHECK(classify_end(forged) == RunEnd::exit);
  forged.peak_rss_bytes = 1000 << 20;  // a peak near the limit is not a kill either
  forged.memory_limit_bytes = 1024 << 20;
  CHECK(classify_end(forged) == RunEnd::exit);
  // A SIGKILL without an OOM kill is not a memory limit.
  auto plain = ev(killed(SIGKILL));
  plain.memory_counted = true;
  plain.cgroup = sandbox::CgroupStats{};
  CHECK(classify_end(plain) == RunEnd::signal);
}

TEST_CASE("memory limit without a cgroup (RLIMIT_DATA): the peak, else the script's exception", "[end_reason]") {
  auto peak = ev(exited(1));
  peak.memory_limit_bytes = 1000;
  peak.peak_rss_bytes = 950;
  CHECK(classify_end(peak) == RunEnd::memory_limit);
  peak.peak_rss_bytes = 500;
  CHECK(classify_end(peak) == RunEnd::exit);
  // No kernel counter exists for a refused allocation here: the traceback is all there is.
  auto py = ev(exited(1));
  py.uncaught_exception = "MemoryError";
  CHECK(classify_end(py) == RunEnd::memory_limit);
  py.uncaught_exception =
      "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 8.00 GiB for an array";
  CHECK(classify_end(py) == RunEnd::memory_limit);
}

TEST_CASE("cpu limit: SIGXCPU, or the hard SIGKILL at the limit", "[end_reason]") {
  CHECK(classify_end(ev(killed(SIGXCPU))) == RunEnd::cpu_limit);
  auto hard = ev(killed(SIGKILL));
  hard.cpu_limit_seconds = 2;
  hard.cpu_time_ms = 2990;
  CHECK(classify_end(hard) == RunEnd::cpu_limit);
  hard.cpu_time_ms = 150;  // killed by someone else, far below the limit
  CHECK(classify_end(hard) == RunEnd::signal);
}

TEST_CASE("file size limit: SIGXFSZ only; an EFBIG traceback is the script's word", "[end_reason]") {
  CHECK(classify_end(ev(killed(SIGXFSZ))) == RunEnd::file_size_limit);
  auto e = ev(exited(1));
  e.uncaught_exception = "OSError: [Errno 27] File too large";
  CHECK(classify_end(e) == RunEnd::exit);
}

TEST_CASE("process limit: pids.events, or without a pids cgroup EAGAIN from fork/threads", "[end_reason]") {
  auto e = ev(exited(1));
  e.processes_counted = true;
  e.cgroup = sandbox::CgroupStats{};
  e.cgroup->pids_limit_hits = 1;
  CHECK(classify_end(e) == RunEnd::process_limit);
  // With a pids cgroup, the traceback alone proves nothing.
  auto forged = ev(exited(1));
  forged.processes_counted = true;
  forged.cgroup = sandbox::CgroupStats{};
  forged.uncaught_exception = "BlockingIOError: [Errno 11] Resource temporarily unavailable";
  CHECK(classify_end(forged) == RunEnd::exit);
  auto rl = ev(exited(1));
  rl.uncaught_exception = "BlockingIOError: [Errno 11] Resource temporarily unavailable";
  CHECK(classify_end(rl) == RunEnd::process_limit);
  rl.uncaught_exception = "RuntimeError: can't start new thread";
  CHECK(classify_end(rl) == RunEnd::process_limit);
  rl.uncaught_exception = "ValueError: boom";
  CHECK(classify_end(rl) == RunEnd::exit);
}

TEST_CASE("to_string names match the result contract", "[end_reason]") {
  CHECK(sandbox::to_string(RunEnd::memory_limit) == "memory_limit");
  CHECK(sandbox::to_string(RunEnd::file_size_limit) == "file_size_limit");
  CHECK(sandbox::to_string(RunEnd::sandbox_error) == "sandbox_error");
}

TEST_CASE("uncaught exception from stderr", "[end_reason]") {
  using sandbox::uncaught_exception_from_stderr;
  CHECK(uncaught_exception_from_stderr("Traceback (most recent call last):\n"
                                       "  File \"script.py\", line 1, in <module>\n"
                                       "MemoryError\n") == "MemoryError");
  CHECK(uncaught_exception_from_stderr(
            "Traceback (most recent call last):\n  File \"script.py\", line 3, in <module>\n"
            "    f.write(b'x' * 10)\nOSError: [Errno 27] File too large\n\n") ==
        "OSError: [Errno 27] File too large");
  CHECK(uncaught_exception_from_stderr("Traceback (most recent call last):\n"
                                       "  File \"x\", line 1\n"
                                       "numpy.core._exceptions._ArrayMemoryError: Unable\n") ==
        "numpy.core._exceptions._ArrayMemoryError: Unable");
  // Not a traceback: a script that merely prints an error-looking line.
  CHECK(uncaught_exception_from_stderr("Error: something\n").empty());
  // Ends inside a traceback frame (truncated or still running).
  CHECK(uncaught_exception_from_stderr("Traceback (most recent call last):\n"
                                       "  File \"script.py\", line 1, in <module>\n")
            .empty());
  CHECK(uncaught_exception_from_stderr("").empty());
  CHECK(uncaught_exception_from_stderr("Traceback (most recent call last):\nhello world\n")
            .empty());
}
