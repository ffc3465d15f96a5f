// decide_outcome, rule by rule: what the caller is told for each combination of evidence.
#include <catch2/catch.hpp>

#include <signal.h>

#include "engine/execution/outcome.h"

using engine::EndReason;
using engine::RunEvidence;

namespace {

int exited_status(int code) { return (code & 0xff) << 8; }
int signalled_status(int signal) { return signal & 0x7f; }

RunEvidence ran(int wait_status) {
  RunEvidence e;
  e.sandbox = "native";
  e.python_version = "3.11.2";
  e.execution_path = "zygote";
  e.dispatched = true;
  e.duration_ms = 12;
  e.exited = engine::zygote::ExitedMessage{};
  e.exited->wait_status = wait_status;
  e.exited->user_cpu_us = 3000;
  e.exited->system_cpu_us = 1000;
  e.exited->max_rss_kb = 2048;
  e.stdout_stream.text = "out\n";
  return e;
}

}  // namespace

TEST_CASE("outcome: a clean exit reports its code, output, usage and rich results") {
  auto e = ran(exited_status(3));
  e.rich.value_repr = "42";
  e.rich.notes = {"a note"};
  const auto r = engine::decide_outcome(e);
  CHECK(r.exit_code == 3);
  CHECK(r.end_reason == EndReason::exit);
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.service_error);
  CHECK(r.stdout_stream.text == "out\n");
  CHECK(r.duration_ms == 12);
  CHECK(r.usage.wall_ms == 12);
  CHECK(r.usage.cpu_ms == 4);
  CHECK(r.usage.peak_memory_bytes == 2048 * 1024);
  CHECK(r.return_value_repr == std::optional<std::string>("42"));
  CHECK(r.notes == std::vector<std::string>{"a note"});
  CHECK(r.sandbox == "native");
  CHECK(r.python_version == "3.11.2");
  CHECK(r.execution_path == "zygote");
}

TEST_CASE("outcome: a signal is -N and end reason signal; no rich results are lost on exit") {
  const auto r = engine::decide_outcome(ran(signalled_status(SIGSEGV)));
  CHECK(r.exit_code == -SIGSEGV);
  CHECK(r.end_reason == EndReason::signal);
}

TEST_CASE("outcome: the cgroup's counters win over the rusage of what was reaped") {
  auto e = ran(signalled_status(SIGKILL));
  e.cgroup = sandbox::CgroupStats{};
  e.cgroup->oom_kills = 1;
  e.cgroup->memory_peak_bytes = 900 << 20;
  e.cgroup->cpu_usage_us = 250000;
  const auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::memory_limit);
  CHECK(r.usage.peak_memory_bytes == 900 << 20);
  CHECK(r.usage.cpu_ms == 250);
}

TEST_CASE("outcome: a timeout wins over the exit the kill caused, and carries no rich results") {
  auto e = ran(signalled_status(SIGKILL));
  e.timed_out = true;
  e.rich.value_repr = "never shown";
  const auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::timeout);
  CHECK(r.timed_out);
  CHECK(r.exit_code == -9);
  CHECK_FALSE(r.return_value_repr);
  CHECK(r.stdout_stream.text == "out\n");  // the output it had stays
}

TEST_CASE("outcome: cancelled before the run reported is -9; after, its exit code stands") {
  RunEvidence before;
  before.dispatched = true;
  before.cancelled = true;
  auto r = engine::decide_outcome(before);
  CHECK(r.end_reason == EndReason::cancelled);
  CHECK(r.exit_code == -9);

  auto after = ran(exited_status(0));
  after.cancelled = true;
  r = engine::decide_outcome(after);
  CHECK(r.exit_code == 0);
  CHECK(r.end_reason == EndReason::cancelled);  // the caller did cancel it
}

TEST_CASE("outcome: service errors are cancelled, refused or sandbox_error, with isError text") {
  RunEvidence e;
  e.service_error = "zygote lost";
  auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::sandbox_error);
  CHECK(r.exit_code == -1);
  CHECK(r.service_error == std::optional<std::string>("zygote lost"));
  CHECK(r.duration_ms == 0);  // never dispatched

  e.refused = true;
  CHECK(engine::decide_outcome(e).end_reason == EndReason::refused);
  e.cancelled = true;  // a cancel at shutdown wins over the reason it could not run
  CHECK(engine::decide_outcome(e).end_reason == EndReason::cancelled);
}

TEST_CASE("outcome: a setup failure reported by the zygote is a service error") {
  auto e = ran(exited_status(1));
  e.exited->flags = engine::zygote::kExitSetupFailed;
  e.exited->detail = "mount /proc: EPERM";
  const auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::sandbox_error);
  CHECK(r.service_error == std::optional<std::string>("sandbox setup failed: mount /proc: EPERM"));
}

TEST_CASE("outcome: an install failure is exit 1 with the installer's lines as stderr, bounded") {
  RunEvidence e;
  e.max_output_bytes = 1024;
  e.install_error = std::string(5000, 'x');
  auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::install_failed);
  CHECK(r.exit_code == 1);
  CHECK_FALSE(r.service_error);
  CHECK(r.stderr_stream.text.size() <= 1024);
  CHECK(r.stderr_stream.dropped_bytes > 0);
  // A service failure while installing is the service's, not the requirements'.
  e.service_error = "no installer";
  r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::sandbox_error);
}

TEST_CASE("outcome: no evidence of an end at all is a sandbox error") {
  RunEvidence e;
  e.dispatched = true;
  const auto r = engine::decide_outcome(e);
  CHECK(r.end_reason == EndReason::sandbox_error);
  CHECK(r.exit_code == -1);
}

TEST_CASE("outcome: a killed run's CPU includes what its tree used before the kill") {
  auto e = ran(signalled_status(SIGKILL));
  e.timed_out = true;
  e.exited->user_cpu_us = 2000;  // the init's own, reaped after the kill
  e.exited->system_cpu_us = 0;
  e.killed_tree_cpu_us = 4'500'000;
  CHECK(engine::decide_outcome(e).usage.cpu_ms == 4500);
  // The cgroup's count, when there is one, is the whole truth.
  e.cgroup = sandbox::CgroupStats{};
  e.cgroup->cpu_usage_us = 4'700'000;
  CHECK(engine::decide_outcome(e).usage.cpu_ms == 4700);
}

TEST_CASE("outcome: without a cgroup counting memory, every result notes the limit is per process") {
  auto e = ran(exited_status(0));
  e.memory_limit_bytes = 512ull << 20;
  e.memory_counted = true;
  CHECK(engine::decide_outcome(e).notes.empty());
  e.memory_counted = false;
  auto r = engine::decide_outcome(e);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("512 MiB) is per process and counts only its private memory") != std::string::npos);
  CHECK(r.notes[0].find("mmap.mmap(-1, n)") != std::string::npos);
  // Also a timeout and a failed install; not a service error, nor an unsandboxed run.
  auto t = ran(exited_status(0));
  t.memory_limit_bytes = 512ull << 20;
  t.timed_out = true;
  CHECK(engine::decide_outcome(t).notes.size() == 1);
  auto i = ran(exited_status(0));
  i.memory_limit_bytes = 512ull << 20;
  i.install_error = "no solution";
  CHECK(engine::decide_outcome(i).notes.size() == 1);
  auto s = ran(exited_status(0));
  s.memory_limit_bytes = 512ull << 20;
  s.service_error = "the sandbox could not start";
  CHECK(engine::decide_outcome(s).notes.empty());
  auto n = ran(exited_status(0));
  n.memory_limit_bytes = 512ull << 20;
  n.sandbox = "none (unsandboxed)";
  CHECK(engine::decide_outcome(n).notes.empty());
}
