// The rlimit layer: each limit is set and really bounds the child; RLIMIT_AS is never touched;
// the fallbacks (NPROC, DATA) apply only when asked.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "sandbox/rlimits.h"
#include "tests/support/sandbox_fork.h"

using test_support::ChildResult;
using test_support::run_in_child;

namespace {

rlim_t soft(int resource) {
  rlimit l{};
  getrlimit(resource, &l);
  return l.rlim_cur;
}

sandbox::Limits small_limits() {
  sandbox::Limits l;
  l.file_size_bytes = 1 << 20;
  l.open_files = 32;
  l.cpu_seconds = 0;
  l.max_processes = 8;
  l.memory_bytes = 64ull << 20;
  return l;
}

// Writes `bytes` into a temp file; returns errno of the first failing write, 0 if all went.
int write_bytes(std::size_t bytes) {
  char path[] = "/tmp/mpes-rlimit-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return -1;
  unlink(path);
  std::vector<char> chunk(64 * 1024, 'x');
  int err = 0;
  for (std::size_t done = 0; done < bytes && err == 0;) {
    const ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) err = errno;
    else done += static_cast<std::size_t>(n);
  }
  close(fd);
  return err;
}

// For tests of other limits: RLIMIT_DATA would also bound the sanitizer's own allocator.
constexpr sandbox::RlimitFallbacks kNoFallbacks{false, false};

}  // namespace

TEST_CASE("apply_rlimits sets each limit and leaves RLIMIT_AS alone", "[rlimits]") {
  ChildResult r = run_in_child([] {
    const rlim_t as_before = soft(RLIMIT_AS);
    sandbox::apply_rlimits(small_limits(), 30);
    if (soft(RLIMIT_CORE) != 0) return 10;
    if (soft(RLIMIT_FSIZE) != (1u << 20)) return 11;
    if (soft(RLIMIT_NOFILE) != 32) return 12;
    rlimit nofile{};
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_max != 32 + sandbox::kRunnerReserveFds) return 17;
    if (soft(RLIMIT_CPU) != 30) return 13;  // no cpu_seconds: the wall timeout
    if (soft(RLIMIT_NPROC) != 8) return 14;
    if (soft(RLIMIT_DATA) != (64u << 20)) return 15;
    if (soft(RLIMIT_AS) != as_before) return 16;
    return 0;
  });
  CHECK(r.exited(0));
  INFO(r.describe());
}

TEST_CASE("cpu_seconds wins over the wall timeout", "[rlimits]") {
  ChildResult r = run_in_child([] {
    auto l = small_limits();
    l.cpu_seconds = 5;
    sandbox::apply_rlimits(l, 30);
    rlimit cpu{};
    getrlimit(RLIMIT_CPU, &cpu);
    return cpu.rlim_cur == 5 && cpu.rlim_max == 6 ? 0 : 1;
  });
  CHECK(r.exited(0));
}

TEST_CASE("without fallbacks RLIMIT_NPROC and RLIMIT_DATA stay as they were", "[rlimits]") {
  ChildResult r = run_in_child([] {
    const rlim_t nproc = soft(RLIMIT_NPROC), data = soft(RLIMIT_DATA);
    sandbox::apply_rlimits(small_limits(), 30, sandbox::RlimitFallbacks{false, false});
    return soft(RLIMIT_NPROC) == nproc && soft(RLIMIT_DATA) == data ? 0 : 1;
  });
  CHECK(r.exited(0));
}

TEST_CASE("RLIMIT_FSIZE stops a large file (EFBIG when SIGXFSZ is ignored)", "[rlimits]") {
  // Control: the same write succeeds without the limit.
  CHECK(run_in_child([] { return write_bytes(2 << 20); }).exited(0));
  ChildResult ignored = run_in_child([] {
    signal(SIGXFSZ, SIG_IGN);  // as CPython does
    sandbox::apply_rlimits(small_limits(), 30, kNoFallbacks);
    return write_bytes(2 << 20);
  });
  CHECK(ignored.exited(EFBIG));
  ChildResult defaulted = run_in_child([] {
    sandbox::apply_rlimits(small_limits(), 30, kNoFallbacks);
    return write_bytes(2 << 20);
  });
  CHECK(defaulted.signaled(SIGXFSZ));
}

TEST_CASE("RLIMIT_NOFILE bounds open files", "[rlimits]") {
  auto open_many = [] {
    int opened = 0;
    while (opened < 200 && open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) ++opened;
    test_support::report(std::to_string(opened));
    return errno == EMFILE || opened == 200 ? 0 : 1;
  };
  ChildResult control = run_in_child(open_many);
  ChildResult limited = run_in_child([&] {
    sandbox::apply_rlimits(small_limits(), 30, kNoFallbacks);
    return open_many();
  });
  REQUIRE(control.exited(0));
  REQUIRE(limited.exited(0));
  CHECK(std::stoi(control.report) == 200);
  CHECK(std::stoi(limited.report) < 32);
}

TEST_CASE("RLIMIT_CPU ends a busy loop with SIGXCPU", "[rlimits]") {
  ChildResult r = run_in_child([] {
    auto l = small_limits();
    l.cpu_seconds = 1;
    sandbox::apply_rlimits(l, 30, kNoFallbacks);
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
    return 0;
  });
  CHECK(r.signaled(SIGXCPU));
}

TEST_CASE("RLIMIT_DATA refuses a large heap; RLIMIT_AS would also refuse a reservation",
          "[rlimits]") {
  auto big_private_map = [] {
    void* p = mmap(nullptr, 256u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? ENOMEM : 0;
  };
  auto reservation = [] {  // PROT_NONE reservation: what numpy/glibc do, not counted as data
    void* p = mmap(nullptr, 4ull << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? ENOMEM : 0;
  };
  CHECK(run_in_child(big_private_map).exited(0));  // control
  CHECK(run_in_child([&] {
          sandbox::apply_rlimits(small_limits(), 30);
          return big_private_map();
        }).exited(ENOMEM));
  CHECK(run_in_child([&] {
          sandbox::apply_rlimits(small_limits(), 30);
          return reservation();
        }).exited(0));
}

TEST_CASE("RLIMIT_NPROC bounds forks of an unprivileged uid", "[rlimits]") {
  if (geteuid() != 0) {
    WARN("needs root to switch to an unused uid: skipped");
    return;
  }
  auto fork_until_refused = [] {
    int forked = 0;
    for (; forked < 40; ++forked) {
      const pid_t pid = fork();
      if (pid < 0) break;
      if (pid == 0) {
        pause();
        _exit(0);
      }
    }
    const int err = errno;
    test_support::report(std::to_string(forked));
    kill(0, SIGKILL);  // the whole process group: this child and what it forked
    return err;
  };
  // An otherwise unused uid, so other processes do not count against the limit.
  const uid_t uid = 43000 + static_cast<uid_t>(getpid() % 10000);
  auto as_uid = [uid, &fork_until_refused](bool limit) {
    return run_in_child([uid, limit, &fork_until_refused]() -> int {
      setpgid(0, 0);
      if (limit) sandbox::apply_rlimits(small_limits(), 30);
      if (syscall(SYS_setresgid, uid, uid, uid) != 0 || syscall(SYS_setresuid, uid, uid, uid) != 0) {
        return 70;
      }
      return fork_until_refused();
    });
  };
  ChildResult control = as_uid(false);
  ChildResult limited = as_uid(true);
  INFO("control " << control.describe() << " limited " << limited.describe());
  CHECK(std::stoi(control.report) == 40);
  CHECK(std::stoi(limited.report) < 8);
}
