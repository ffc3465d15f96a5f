// CPU of a process tree read from /proc, as the server does before killing a run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "sandbox/proc_tree.h"
#include "sandbox/unique_fd.h"

namespace {

// Uses this much CPU time (not wall time: the machine may be busy).
void burn(std::chrono::milliseconds how_long) {
  const auto cpu_ms = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  };
  const auto until = cpu_ms() + how_long.count();
  volatile unsigned long x = 0;
  while (cpu_ms() < until) x = x + 1;
}

}  // namespace

TEST_CASE("proc tree: the CPU of a process, its live descendants and what they reaped") {
  // root -> child (burns 300 ms, then waits) -> grandchild (burns 300 ms, exits: reaped by child)
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t root = ::fork();
  REQUIRE(root >= 0);
  if (root == 0) {
    ::setpgid(0, 0);  // one group for the whole tree, killed at the end
    const pid_t child = ::fork();
    if (child == 0) {
      const pid_t grandchild = ::fork();
      if (grandchild == 0) {
        burn(std::chrono::milliseconds(300));
        ::_exit(0);
      }
      ::waitpid(grandchild, nullptr, 0);
      burn(std::chrono::milliseconds(300));
      [[maybe_unused]] auto n = ::write(ready[1], "x", 1);
      ::pause();
      ::_exit(0);
    }
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);

  sandbox::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, root, 0)));
  REQUIRE(pidfd);
  CHECK(sandbox::pid_of_pidfd(pidfd.get()) == root);
  const std::int64_t cpu = sandbox::tree_cpu_us(root);
  CHECK(cpu >= 500000);   // both burns, the reaped grandchild's included
  CHECK(cpu < 2000000);

  ::kill(-root, SIGKILL);
  ::waitpid(root, nullptr, 0);
  CHECK(sandbox::pid_of_pidfd(pidfd.get()) == -1);  // gone: a reaped process has no pid
  CHECK(sandbox::tree_cpu_us(root) == -1);
}

TEST_CASE("proc tree: the tree is built from parent ids only") {
  std::map<pid_t, sandbox::ProcStat> stats = {
      {10, {1, 100}}, {11, {10, 50}}, {12, {11, 25}}, {20, {1, 1000}}};
  const long hz = ::sysconf(_SC_CLK_TCK);
  CHECK(sandbox::tree_cpu_us(stats, 10) == 175 * 1000000 / hz);
  CHECK(sandbox::tree_cpu_us(stats, 11) == 75 * 1000000 / hz);
  CHECK(sandbox::tree_cpu_us(stats, 99) == -1);
}
