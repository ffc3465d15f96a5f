#include "bench/floor/wake_up.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/floor/measure.h"
#include "sandbox/unique_fd.h"

namespace floor_bench {
namespace {

using sandbox::UniqueFd;

[[noreturn]] void fail(const std::string& what) { floor_bench::fail("wake-up", what); }

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) fail("sched_setaffinity to CPU " + std::to_string(cpu));
}

// From this process (pinned by the caller) to a child pinned to `child_cpu`: `samples` round
// trips (one byte each way through two pipes), each after `idle_ms` of sleep (none when 0),
// after three not counted. Median, µs.
double round_trips(int child_cpu, int samples, int idle_ms) {
  int to_child[2];
  int to_parent[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) fail("pipe");
  UniqueFd child_rd(to_child[0]), parent_wr(to_child[1]);
  if (::pipe2(to_parent, O_CLOEXEC) != 0) fail("pipe");
  UniqueFd parent_rd(to_parent[0]), child_wr(to_parent[1]);
  const pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    parent_wr.reset();  // so that the parent's close is this child's EOF
    parent_rd.reset();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(child_cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) ::_exit(1);
    char byte = 0;
    while (::read(child_rd.get(), &byte, 1) == 1) {
      if (::write(child_wr.get(), &byte, 1) != 1) ::_exit(1);
    }
    ::_exit(0);
  }
  child_rd.reset();
  child_wr.reset();
  std::vector<double> times;
  const int warm = 3;
  bool ok = true;
  for (int i = 0; i < warm + samples && ok; ++i) {
    if (idle_ms > 0) {
      const timespec pause{idle_ms / 1000, static_cast<long>(idle_ms % 1000) * 1000000L};
      ::nanosleep(&pause, nullptr);
    }
    char byte = 1;
    const std::int64_t t0 = now_ns();
    ok = ::write(parent_wr.get(), &byte, 1) == 1 && ::read(parent_rd.get(), &byte, 1) == 1;
    const std::int64_t t1 = now_ns();
    if (ok && i >= warm) times.push_back(static_cast<double>(t1 - t0) / 1e3);
  }
  parent_wr.reset();  // the child reads EOF and exits
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ok || times.empty()) throw std::runtime_error("wake-up: the pinned child did not answer");
  return median(times);
}

}  // namespace

nlohmann::json measure_wake_up(int samples, int idle_ms) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) fail("sched_getaffinity");
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.empty()) throw std::runtime_error("wake-up: no CPU in this process's affinity mask");
  nlohmann::json out = {{"samples", samples}, {"idle_ms", idle_ms}, {"cpus", cpus}};
  try {
    pin(cpus[0]);
    out["same_cpu_us"] = round_trips(cpus[0], samples, idle_ms);
    if (cpus.size() > 1) {
      out["cross_cpu_us"] = round_trips(cpus[1], samples, idle_ms);
      out["cross_cpu_back_to_back_us"] = round_trips(cpus[1], samples, 0);
    } else {
      out["cross_cpu_us"] = nullptr;
      out["cross_cpu_back_to_back_us"] = nullptr;
    }
  } catch (...) {
    ::sched_setaffinity(0, sizeof allowed, &allowed);
    throw;
  }
  ::sched_setaffinity(0, sizeof allowed, &allowed);
  return out;
}

}  // namespace floor_bench
