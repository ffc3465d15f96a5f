// Per-run cgroups, on this host's real hierarchies (root needed; skipped with a warning
// otherwise): creation with limits, joining through a server-opened fd from an unprivileged
// child in its own user and cgroup namespaces, enforcement, counters, and cleanup.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox/cgroup.h"
#include "sandbox/identity.h"
#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"
#include "tests/support/sandbox_fork.h"

using sandbox::CgroupSetup;
using sandbox::RunCgroup;
using test_support::ChildResult;
using test_support::run_in_child;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool dir_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string tag() { return "mpes-test-" + std::to_string(getpid()); }

// The server side of the tests: parents prepared for this test process, released at the end.
struct Prepared {
  CgroupSetup setup = sandbox::prepare_cgroups(sandbox::find_cgroup_hierarchies(), tag());
  ~Prepared() { sandbox::release_cgroups(setup); }
  bool usable() const { return setup.limits_memory() && setup.limits_processes(); }
};

sandbox::Limits limits(std::uint64_t memory_mb, std::uint32_t processes) {
  sandbox::Limits l;
  l.memory_bytes = memory_mb << 20;
  l.max_processes = processes;
  return l;
}

// As the zygote's child would be: uid 65534 on the host, own user + cgroup namespaces, no
// capabilities.
void become_unprivileged_child() {
  if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, 65534, 65534, 65534) != 0 ||
      syscall(SYS_setresuid, 65534, 65534, 65534) != 0) {
    throw std::runtime_error("cannot switch to uid 65534");
  }
  if (unshare(CLONE_NEWUSER | CLONE_NEWCGROUP) != 0) {
    throw std::runtime_error(std::string("unshare: ") + strerror(errno));
  }
  sandbox::drop_identity();
}

int touch_megabytes(std::size_t mb) {
  const std::size_t size = mb << 20;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  std::memset(p, 1, size);
  return 0;
}

int fork_until_refused(int max) {
  int forked = 0;
  for (; forked < max; ++forked) {
    const pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      pause();
      _exit(0);
    }
  }
  test_support::report(std::to_string(forked));
  return 0;
}

#define REQUIRE_CGROUPS(prepared)                                                     \
  if (geteuid() != 0 || !(prepared).usable()) {                                      \
    WARN("no writable memory+pids cgroups here (" << (prepared).setup.note << ")"); \
    return;                                                                           \
  }

}  // namespace

TEST_CASE("cgroup hierarchies are found from mountinfo and /proc/self/cgroup", "[cgroup]") {
  const auto where = sandbox::find_cgroup_hierarchies();
  const std::string own = read_text("/proc/self/cgroup");
  if (!where.v1_memory_dir.empty()) {
    CHECK(access((where.v1_memory_dir + "/memory.limit_in_bytes").c_str(), F_OK) == 0);
    // The directory is our own cgroup: it lists this process.
    CHECK_THAT(read_text(where.v1_memory_dir + "/cgroup.procs"),
               Catch::Contains(std::to_string(getpid())));
  }
  if (!where.v1_pids_dir.empty()) {
    CHECK_THAT(read_text(where.v1_pids_dir + "/cgroup.procs"),
               Catch::Contains(std::to_string(getpid())));
  }
  if (!where.v2_dir.empty()) {
    CHECK_THAT(read_text(where.v2_dir + "/cgroup.procs"),
               Catch::Contains(std::to_string(getpid())));
  }
  CHECK((where.v1_memory_dir.empty() == (own.find(":memory:") == std::string::npos)));
}

TEST_CASE("prepare creates the server's parents, removes stale ones; release removes them",
          "[cgroup]") {
  const auto where = sandbox::find_cgroup_hierarchies();
  if (geteuid() != 0 || where.v1_memory_dir.empty()) {
    WARN("needs root and a v1 memory hierarchy");
    return;
  }
  // A leftover of a server that died (that pid cannot exist: above pid_max).
  const std::string stale = where.v1_memory_dir + "/mpes-test-99999999";
  REQUIRE((mkdir(stale.c_str(), 0755) == 0 || errno == EEXIST));
  REQUIRE(mkdir((stale + "/run-1").c_str(), 0755) == 0);
  CgroupSetup setup;
  {
    Prepared p;
    setup = p.setup;
    CHECK(p.setup.version == sandbox::CgroupVersion::v1);
    CHECK(dir_exists(p.setup.memory_parent));
    CHECK(dir_exists(p.setup.pids_parent));
    CHECK_THAT(p.setup.memory_parent, Catch::EndsWith("/" + tag()));
    CHECK_FALSE(dir_exists(stale));
    CHECK_THAT(p.setup.describe(), Catch::StartsWith("v1 memory+pids"));
    CHECK_THAT(p.setup.memory_mechanism(), Catch::Contains("memory.limit_in_bytes"));
    CHECK(p.setup.process_mechanism() == "cgroup v1 pids.max");
  }
  CHECK_FALSE(dir_exists(setup.memory_parent));
  CHECK_FALSE(dir_exists(setup.pids_parent));
}

TEST_CASE("assess_cgroups changes nothing", "[cgroup]") {
  const auto where = sandbox::find_cgroup_hierarchies();
  const std::string before = read_text("/proc/self/cgroup");
  const auto setup = sandbox::assess_cgroups(where);
  if (setup.limits_memory()) {
    CHECK(setup.memory_parent == (setup.version == sandbox::CgroupVersion::v2
                                      ? where.v2_dir
                                      : where.v1_memory_dir));
  }
  // Nothing moved and nothing created for a server tag.
  CHECK(read_text("/proc/self/cgroup") == before);
  CHECK_FALSE(dir_exists(setup.memory_parent + "/" + tag()));
}

TEST_CASE("a run cgroup carries the limits and is removed", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  std::vector<std::string> dirs;
  {
    RunCgroup cg = RunCgroup::create(p.setup, "run-limits", limits(48, 16));
    REQUIRE(cg.dirs().size() == 2);
    dirs = cg.dirs();
    const std::string mem = p.setup.memory_parent + "/run-limits";
    CHECK(std::stoull(read_text(mem + "/memory.limit_in_bytes")) == (48ull << 20));
    if (p.setup.swap_limited) {
      CHECK(std::stoull(read_text(mem + "/memory.memsw.limit_in_bytes")) == (48ull << 20));
    }
    CHECK(read_text(p.setup.pids_parent + "/run-limits/pids.max") == "16\n");
    // Moving keeps one owner.
    RunCgroup moved = std::move(cg);
    CHECK(cg.empty());
    CHECK(moved.dirs() == dirs);
  }
  for (const auto& d : dirs) CHECK_FALSE(dir_exists(d));
}

TEST_CASE("a run cgroup that cannot be made for want of descriptors says which limit to raise", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  const ChildResult r = run_in_child([&] {
    // Every descriptor this process may have is in use: the cgroup's directory cannot be opened.
    std::vector<sandbox::UniqueFd> held;
    for (;;) {
      sandbox::UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!fd) break;
      held.push_back(std::move(fd));
    }
    if (errno != EMFILE) return 3;
    try {
      RunCgroup cg = RunCgroup::create(p.setup, "run-no-fds", limits(48, 16));
    } catch (const sandbox::SetupError& e) {
      held.clear();  // first: UBSan's check of the call below needs a descriptor (a pipe) itself
      test_support::report(e.what());
      return 0;
    }
    return 4;
  });
  INFO(r.describe());
  REQUIRE(r.exited(0));
  CHECK(r.report.find("Too many open files") != std::string::npos);
  CHECK(r.report.find("raise ulimit -n") != std::string::npos);
}

TEST_CASE("an unprivileged child in its own namespaces joins through the server's fds",
          "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  RunCgroup cg = RunCgroup::create(p.setup, "run-join", limits(64, 16));
  sandbox::JoinFds fds = cg.open_join_fds();
  REQUIRE(fds.fds().size() == 2);

  // Control: the same child cannot join by opening cgroup.procs itself.
  const std::string procs = p.setup.pids_parent + "/run-join/cgroup.procs";
  ChildResult control = run_in_child([&] {
    become_unprivileged_child();
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno == EACCES || errno == EPERM ? 0 : 1;
    return write(fd, "0", 1) == 1 ? 2 : 0;
  });
  CHECK(control.exited(0));
  INFO(control.describe());

  ChildResult r = run_in_child([&] {
    become_unprivileged_child();
    sandbox::join_cgroups(fds.fds());
    test_support::report(read_text("/proc/self/cgroup"));
    return 0;
  });
  INFO(r.describe());
  REQUIRE(r.exited(0));
  CHECK_THAT(r.report, Catch::Contains(":memory:") && Catch::Contains(tag() + "/run-join"));
  std::istringstream lines(r.report);
  std::string line;
  int joined = 0;
  while (std::getline(lines, line)) {
    if ((line.find(":memory:") != std::string::npos || line.find(":pids:") != std::string::npos) &&
        line.find(tag() + "/run-join") != std::string::npos) {
      ++joined;
    }
  }
  CHECK(joined == 2);
}

TEST_CASE("the memory limit OOM-kills the run and the counters say so", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  // Control: the allocation itself works outside the cgroup.
  CHECK(run_in_child([] { return touch_megabytes(96); }).exited(0));

  RunCgroup cg = RunCgroup::create(p.setup, "run-oom", limits(32, 16));
  sandbox::JoinFds fds = cg.open_join_fds();
  // Counters opened before the run and read again after it see what happened meanwhile.
  const sandbox::CgroupCounters counters = cg.open_counters();
  const sandbox::CgroupCounters everything = cg.open_stats();  // what read_stats reads, held open
  const auto before = counters.read();
  CHECK(before.oom_kills == 0);
  CHECK(before.memory_limit_hits == 0);
  ChildResult r = run_in_child([&] {
    become_unprivileged_child();
    sandbox::join_cgroups(fds.fds());
    return touch_megabytes(96);
  });
  CHECK(r.signaled(SIGKILL));
  const auto stats = cg.read_stats();
  CHECK(stats.oom_kills >= 1);
  CHECK(stats.memory_peak_bytes >= (24ll << 20));
  CHECK(stats.memory_peak_bytes <= (33ll << 20));
  CHECK(stats.pids_limit_hits == 0);
  const auto after = counters.read();
  CHECK(after.oom_kills == stats.oom_kills);
  CHECK(after.memory_limit_hits == stats.memory_limit_hits);
  CHECK(after.pids_limit_hits == 0);
  CHECK(after.memory_peak_bytes == -1);  // not a counter: not read
  const auto held = everything.read();
  CHECK(held.oom_kills == stats.oom_kills);
  CHECK(held.memory_limit_hits == stats.memory_limit_hits);
  CHECK(held.memory_peak_bytes == stats.memory_peak_bytes);
  CHECK(held.pids_peak == stats.pids_peak);
}

TEST_CASE("the pids limit refuses forks and pids.events counts it", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  auto run = [](const sandbox::JoinFds* fds) {
    return run_in_child([fds] {
      if (fds != nullptr) {
        become_unprivileged_child();  // setsid: its own process group too
        sandbox::join_cgroups(fds->fds());
      } else {
        setpgid(0, 0);
      }
      fork_until_refused(20);
      kill(0, SIGKILL);
      return 0;
    });
  };
  ChildResult control = run(nullptr);
  CHECK(control.report == "20");

  RunCgroup cg = RunCgroup::create(p.setup, "run-pids", limits(256, 4));
  sandbox::JoinFds fds = cg.open_join_fds();
  const sandbox::CgroupCounters counters = cg.open_counters();
  CHECK(counters.read().pids_limit_hits == 0);
  ChildResult r = run(&fds);
  INFO(r.describe());
  CHECK(r.report == "3");  // the child itself is the 4th task
  const auto stats = cg.read_stats();
  CHECK(stats.pids_limit_hits >= 1);
  CHECK(stats.oom_kills == 0);
  if (stats.pids_peak >= 0) CHECK(stats.pids_peak == 4);
  const auto after = counters.read();
  CHECK(after.pids_limit_hits == stats.pids_limit_hits);
  CHECK(after.oom_kills == 0);
}

TEST_CASE("remove kills a setsid daemon left in the run's cgroup", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  // The whole scenario runs in a root child that is a subreaper, so it can reap the daemon.
  ChildResult r = run_in_child([&]() -> int {
    prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
    RunCgroup cg = RunCgroup::create(p.setup, "run-daemon", limits(64, 16));
    sandbox::JoinFds fds = cg.open_join_fds();
    int told[2];  // the intermediate says which pid the daemon got
    if (pipe2(told, O_CLOEXEC) != 0) return 9;
    const pid_t worker = fork();
    if (worker == 0) {
      sandbox::join_cgroups(fds.fds());
      if (fork() == 0) {
        setsid();
        const pid_t d = fork();
        if (d == 0) {
          for (;;) pause();
        }
        if (write(told[1], &d, sizeof d) != static_cast<ssize_t>(sizeof d)) _exit(1);
        _exit(0);
      }
      _exit(0);
    }
    close(told[1]);
    int status = 0;
    waitpid(worker, &status, 0);
    pid_t daemon = 0;
    if (read(told[0], &daemon, sizeof daemon) != static_cast<ssize_t>(sizeof daemon)) return 8;
    // The intermediate leaves (reparented to us, a zombie until reaped below); the daemon stays.
    // Up to 5 s: it exits asynchronously (slow under ASan on a busy machine).
    for (int i = 0; i < 500 && cg.pids() != std::vector<int>{daemon}; ++i) usleep(10000);
    if (cg.pids() != std::vector<int>{daemon}) return 10;
    if (!cg.remove()) return 11;
    for (const auto& d : cg.dirs()) {
      if (dir_exists(d)) return 12;
    }
    // The daemon died of SIGKILL.
    for (;;) {
      const pid_t w = waitpid(-1, &status, 0);
      if (w == daemon) return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 13;
      if (w < 0) return 14;
    }
  });
  INFO(r.describe());
  CHECK(r.exited(0));
}

// A child that joins a run's cgroup through `fds`, runs `prepare`, says so (the call returns
// then), runs `then` and exits with what it returns.
template <typename Prepare, typename Then>
pid_t child_in_cgroup(const sandbox::JoinFds& fds, Prepare prepare, Then then) {
  int ready[2];
  REQUIRE(pipe2(ready, O_CLOEXEC) == 0);
  const pid_t child = fork();
  if (child == 0) {
    sandbox::join_cgroups(fds.fds());
    prepare();
    if (write(ready[1], "x", 1) != 1) _exit(100);
    _exit(then());
  }
  close(ready[1]);
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  close(ready[0]);
  return child;
}

TEST_CASE("remove told what to wait on lets a run's last process exit; else kills it", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  for (const bool told : {true, false}) {
    INFO((told ? "with" : "without") << " the process's pidfd");
    RunCgroup cg = RunCgroup::create(p.setup, told ? "run-told" : "run-untold", limits(64, 16));
    const std::vector<std::string> dirs = cg.dirs();
    const sandbox::JoinFds fds = cg.open_join_fds();
    const pid_t child = child_in_cgroup(fds, [] {}, [] {
      usleep(20000);  // exiting, as a run's processes are while its cgroup is removed
      return 0;
    });
    sandbox::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
    REQUIRE(pidfd);
    CHECK(cg.remove(told ? pidfd.get() : -1));
    for (const auto& d : dirs) CHECK_FALSE(dir_exists(d));
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    if (told) {
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // waited for, not killed
    } else {
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    }
  }
}

TEST_CASE("memory_current reads what read_stats says of the memory in use", "[cgroup]") {
  Prepared p;
  REQUIRE_CGROUPS(p);
  RunCgroup cg = RunCgroup::create(p.setup, "run-current", limits(64, 16));
  const sandbox::JoinFds fds = cg.open_join_fds();
  const pid_t child = child_in_cgroup(
      fds,
      [] {
        constexpr std::size_t kBytes = 16u << 20;
        auto* block = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (block == MAP_FAILED) _exit(3);
        std::memset(block, 1, kBytes);  // charged to the run's cgroup
      },
      [] {
        pause();
        return 0;
      });
  const std::int64_t alone = cg.memory_current();
  const std::int64_t all = cg.read_stats().memory_current_bytes;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (!p.setup.limits_memory()) {
    CHECK(alone == -1);
    return;
  }
  CHECK(alone >= (16 << 20));
  CHECK(all >= (16 << 20));
  CHECK(std::llabs(alone - all) < (1 << 20));
}

TEST_CASE("joining through an fd works on the cgroup v2 hierarchy too", "[cgroup]") {
  const auto where = sandbox::find_cgroup_hierarchies();
  if (geteuid() != 0 || where.v2_dir.empty() || access(where.v2_dir.c_str(), W_OK) != 0) {
    WARN("no writable cgroup v2 hierarchy");
    return;
  }
  const std::string dir = where.v2_dir + "/" + tag() + "-v2";
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  const int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  sandbox::JoinFds fds(std::vector<int>{fd});
  ChildResult r = run_in_child([&] {
    become_unprivileged_child();
    sandbox::join_cgroups(fds.fds());
    test_support::report(read_text("/proc/self/cgroup"));
    return 0;
  });
  for (int i = 0; i < 100 && rmdir(dir.c_str()) != 0; ++i) usleep(10000);
  INFO(r.describe());
  CHECK(r.exited(0));
  CHECK_THAT(r.report, Catch::Contains("0::") && Catch::Contains(tag() + "-v2"));
  CHECK_FALSE(dir_exists(dir));
}

TEST_CASE("without cgroups a run cgroup is empty and harmless", "[cgroup]") {
  RunCgroup cg = RunCgroup::create(CgroupSetup{}, "run-none", limits(64, 16));
  CHECK(cg.empty());
  CHECK(cg.open_join_fds().fds().empty());
  const auto stats = cg.read_stats();
  CHECK(stats.memory_peak_bytes == -1);
  CHECK(stats.oom_kills == 0);
  CHECK(cg.remove());
  sandbox::join_cgroups({});  // nothing to join: no error
}

TEST_CASE("v2 stats: the run's CPU comes from cpu.stat, its peak from memory.peak", "[cgroup]") {
  // A v2 run cgroup's files, faked in a directory (this host's v2 hierarchy has no controllers).
  char parent[] = "/tmp/mpes-cgroup-v2-XXXXXX";
  REQUIRE(mkdtemp(parent) != nullptr);
  CgroupSetup setup;
  setup.version = sandbox::CgroupVersion::v2;
  setup.memory_parent = setup.pids_parent = parent;
  {
    RunCgroup cg = RunCgroup::create(setup, "run-1", limits(0, 0));
    const std::string dir = std::string(parent) + "/run-1";
    REQUIRE(dir_exists(dir));
    CHECK(cg.read_stats().cpu_usage_us == -1);  // no cpu.stat: unknown
    std::ofstream(dir + "/cpu.stat") << "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n";
    std::ofstream(dir + "/memory.peak") << "52428800\n";
    const auto stats = cg.read_stats();
    CHECK(stats.cpu_usage_us == 1234567);
    CHECK(stats.memory_peak_bytes == 52428800);
    // The limit counters: memory.events and pids.events, held open and read again in place.
    std::ofstream(dir + "/memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
    std::ofstream(dir + "/pids.events") << "max 0\n";
    const sandbox::CgroupCounters counters = cg.open_counters();
    CHECK(counters.read().memory_limit_hits == 3);
    CHECK(counters.read().oom_kills == 1);
    CHECK(counters.read().pids_limit_hits == 0);
    {
      std::ofstream events(dir + "/pids.events", std::ios::in | std::ios::out);
      events << "max 7\n";
    }
    CHECK(counters.read().pids_limit_hits == 7);
    for (const char* name : {"/cpu.stat", "/memory.peak", "/memory.events", "/pids.events"}) {
      unlink((dir + name).c_str());
    }
    CHECK(cg.remove());
  }
  CHECK(rmdir(parent) == 0);
}

TEST_CASE("a v2 hierarchy without memory+pids controllers is not used, and the note says why",
          "[cgroup]") {
  const auto where = sandbox::find_cgroup_hierarchies();
  if (where.v2_dir.empty()) {
    WARN("no cgroup v2 hierarchy here");
    return;
  }
  const std::string controllers = read_text(where.v2_dir + "/cgroup.controllers");
  const bool has_both = controllers.find("memory") != std::string::npos &&
                        controllers.find("pids") != std::string::npos;
  if (has_both) {
    WARN("this host's v2 hierarchy offers memory+pids: the fallback is not reachable here");
    return;
  }
  sandbox::CgroupHierarchies only_v2;
  only_v2.v2_dir = where.v2_dir;
  const std::string before = read_text("/proc/self/cgroup");
  const auto setup = sandbox::prepare_cgroups(only_v2, tag());
  CHECK(setup.version == sandbox::CgroupVersion::none);
  CHECK_FALSE(setup.limits_memory());
  CHECK_THAT(setup.note, Catch::Contains("no memory+pids controllers"));
  CHECK(read_text("/proc/self/cgroup") == before);  // the server was not moved
  CHECK_FALSE(dir_exists(where.v2_dir + "/" + tag() + "-server"));
}
