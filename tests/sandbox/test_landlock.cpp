// The run-scoping layer: the decision from the probed Landlock ABI, and the domain it makes (an
// abstract unix socket bound outside is out of reach, the domain's own sockets are not).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "sandbox/child_setup.h"
#include "sandbox/landlock.h"
#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"
#include "tests/support/sandbox_fork.h"

using sandbox::LandlockProbe;
using sandbox::plan_run_scoping;
using sandbox::UniqueFd;
using test_support::ChildResult;
using test_support::run_in_child;

namespace {

constexpr std::uint64_t kBoth = sandbox::kScopeAbstractUnixSocket | sandbox::kScopeSignal;

LandlockProbe abi(int version) { return LandlockProbe{version, 0}; }
LandlockProbe failed(int err) { return LandlockProbe{0, err}; }

// An abstract address "\0name".
sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  name.copy(addr.sun_path + 1, name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

UniqueFd listen_abstract(const std::string& name) {
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(name, len);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd.get(), 4) != 0) {
    return UniqueFd();
  }
  return fd;
}

// 0 when connected, else the errno.
int connect_abstract(const std::string& name) {
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(name, len);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return errno;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0 ? 0 : errno;
}

}  // namespace

TEST_CASE("run scoping: ABI 6 and later scope abstract unix sockets and signals", "[landlock]") {
  for (int version : {6, 7, 9}) {
    const auto plan = plan_run_scoping(true, abi(version));
    CHECK(plan.applied());
    CHECK(plan.scoped == kBoth);
    CHECK(plan.description == "landlock ABI " + std::to_string(version) + " (abstract unix sockets, signals)");
  }
}

TEST_CASE("run scoping: nothing is applied, and it says why, without scoping", "[landlock]") {
  struct Case {
    LandlockProbe probe;
    const char* why;
  };
  const Case cases[] = {
      {abi(5), "unavailable: landlock ABI 5 has no scoping"},
      {abi(1), "unavailable: landlock ABI 1 has no scoping"},
      {failed(ENOSYS), "unavailable: this kernel has no Landlock (ENOSYS"},
      {failed(EOPNOTSUPP), "unavailable: Landlock is built in but not enabled (EOPNOTSUPP; add landlock to the lsm="},
      {failed(EPERM), "unavailable: the landlock syscalls are denied (EPERM)"},
      {failed(EINVAL), "unavailable: landlock_create_ruleset failed: Invalid argument"},
  };
  for (const auto& c : cases) {
    const auto plan = plan_run_scoping(true, c.probe);
    INFO(plan.description);
    CHECK_FALSE(plan.applied());
    CHECK(plan.scoped == 0);
    CHECK(plan.description.rfind(c.why, 0) == 0);
    CHECK_THAT(plan.description, Catch::Contains("runs are not scoped"));
  }
}

TEST_CASE("run scoping: the none backend applies nothing, whatever the kernel has", "[landlock]") {
  for (const auto& probe : {abi(7), failed(ENOSYS)}) {
    const auto plan = plan_run_scoping(false, probe);
    CHECK_FALSE(plan.applied());
    CHECK(plan.description.rfind("none (--sandbox-backend none", 0) == 0);
  }
}

TEST_CASE("run scoping: the domain cannot reach outside abstract sockets or signal out, its own children can",
          "[landlock]") {
  const auto plan = plan_run_scoping(true, sandbox::probe_landlock());
  if (!plan.applied()) {
    WARN("run scoping " << plan.description);
    return;
  }
  const std::string outside = "mpes-test-landlock-outside-" + std::to_string(::getpid());
  UniqueFd listener = listen_abstract(outside);
  REQUIRE(listener);

  ChildResult r = run_in_child([&] {
    // Controls, before the domain: the outside socket and the parent are reachable.
    if (connect_abstract(outside) != 0) return 10;
    if (::kill(::getppid(), 0) != 0) return 11;
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) return 12;
    sandbox::apply_run_scoping(plan.scoped);
    const int err = connect_abstract(outside);
    test_support::report("connect after: " + std::to_string(err) + "\n");
    if (err != EPERM) return 20;
    if (::kill(::getppid(), 0) == 0 || errno != EPERM) return 21;
    // The domain's own socket, from a child (which inherits the domain).
    const std::string own = outside + "-own";
    UniqueFd mine = listen_abstract(own);
    if (!mine) return 30;
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(connect_abstract(own) == 0 && ::kill(::getppid(), 0) == 0 ? 0 : 1);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 31;
    return 0;
  });
  INFO(r.describe());
  CHECK(r.exited(0));
}

TEST_CASE("run scoping: nothing to apply leaves the process unscoped", "[landlock]") {
  const std::string outside = "mpes-test-landlock-none-" + std::to_string(::getpid());
  UniqueFd listener = listen_abstract(outside);
  REQUIRE(listener);
  ChildResult r = run_in_child([&] {
    sandbox::apply_run_scoping(0);
    return connect_abstract(outside);
  });
  INFO(r.describe());
  CHECK(r.exited(0));
}

TEST_CASE("run scoping: prepare_run_process makes the domain after no_new_privs; the none backend none",
          "[landlock]") {
  const auto plan = plan_run_scoping(true, sandbox::probe_landlock());
  if (!plan.applied()) {
    WARN("run scoping " << plan.description);
    return;
  }
  const std::string outside = "mpes-test-landlock-setup-" + std::to_string(::getpid());
  UniqueFd listener = listen_abstract(outside);
  REQUIRE(listener);
  for (const bool isolate : {true, false}) {
    INFO("isolate " << isolate);
    ChildResult r = run_in_child([&] {
      // Unprivileged, as the zygote is: landlock_restrict_self then needs no_new_privs first.
      if (::geteuid() == 0 && (::syscall(SYS_setresgid, 65534, 65534, 65534) != 0 ||
                               ::syscall(SYS_setresuid, 65534, 65534, 65534) != 0)) {
        return 40;
      }
      sandbox::ChildSpec spec;
      spec.isolate = isolate;
      spec.landlock_scoped = plan_run_scoping(isolate, sandbox::probe_landlock()).scoped;
      sandbox::prepare_run_process(spec);
      return connect_abstract(outside);
    });
    INFO(r.describe());
    CHECK(r.exited(isolate ? EPERM : 0));
  }
}

TEST_CASE("a build without network: no TCP connect or bind, nothing outside scoped, no access to its parent",
          "[landlock]") {
  const auto probe = sandbox::probe_landlock();
  if (probe.abi < sandbox::kFirstNetworkAbi) {
    WARN("landlock ABI " << probe.abi << ": builds rely on the seccomp filter alone");
    return;
  }
  // A TCP listener on the loopback, outside the domain.
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(listener);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener.get(), 8) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string outside = "mpes-test-landlock-build-" + std::to_string(::getpid());
  UniqueFd abstract_listener = listen_abstract(outside);
  REQUIRE(abstract_listener);

  ChildResult r = run_in_child([&] {
    auto tcp_connect = [&] {
      UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!s) return errno;
      return ::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
    };
    auto tcp_bind = [] {
      UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in any{};
      any.sin_family = AF_INET;
      any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return ::bind(s.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 ? 0 : errno;
    };
    const std::string parent_mem = "/proc/" + std::to_string(::getppid()) + "/mem";
    auto open_parent_mem = [&] {
      UniqueFd fd(::open(parent_mem.c_str(), O_RDONLY | O_CLOEXEC));
      return fd ? 0 : errno;
    };
    // Controls, before the domain.
    if (tcp_connect() != 0) return 10;
    if (tcp_bind() != 0) return 11;
    const bool parent_reachable = open_parent_mem() == 0;
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) return 12;
    sandbox::BuildDomain domain;
    domain.network = false;
    if (!sandbox::apply_build_domain(probe, domain).network) return 13;
    test_support::report("connect " + std::to_string(tcp_connect()) + " bind " + std::to_string(tcp_bind()) + "\n");
    if (tcp_connect() != EACCES) return 20;
    if (tcp_bind() != EACCES) return 21;
    if (parent_reachable && open_parent_mem() == 0) return 22;
    if (probe.abi >= sandbox::kFirstScopingAbi && connect_abstract(outside) != EPERM) return 23;
    return 0;
  });
  INFO(r.describe());
  CHECK(r.exited(0));
}

TEST_CASE("builds: what the kernel's Landlock confines, said", "[landlock]") {
  auto plan = sandbox::plan_build_confinement(abi(7));
  CHECK(plan.confined);
  CHECK(plan.description == "landlock ABI 7: each build writes only its own directories");
  plan = sandbox::plan_build_confinement(abi(2));
  CHECK(plan.confined);
  CHECK_THAT(plan.description, Catch::Contains("may truncate"));
  plan = sandbox::plan_build_confinement(failed(ENOSYS));
  CHECK_FALSE(plan.confined);
  CHECK(plan.description.rfind("unavailable: this kernel has no Landlock (ENOSYS", 0) == 0);
  CHECK_THAT(plan.description, Catch::Contains("builds from source can write the environment being built"));
  CHECK(sandbox::filesystem_write_rights(0) == 0);
  CHECK((sandbox::filesystem_write_rights(3) & sandbox::kFsTruncate) != 0);
  CHECK((sandbox::filesystem_write_rights(1) & (sandbox::kFsRefer | sandbox::kFsTruncate)) == 0);
}

TEST_CASE("a build's domain writes beneath its directories and into the devices, nowhere else", "[landlock]") {
  const auto probe = sandbox::probe_landlock();
  if (probe.abi < 1) {
    WARN("no Landlock: builds are not confined");
    return;
  }
  char own_template[] = "/tmp/mpes-test-build-own-XXXXXX";
  char other_template[] = "/tmp/mpes-test-build-other-XXXXXX";
  REQUIRE(::mkdtemp(own_template) != nullptr);
  REQUIRE(::mkdtemp(other_template) != nullptr);
  const std::string own = own_template;
  const std::string other = other_template;
  const std::string victim = other + "/module.py";
  {
    UniqueFd fd(::open(victim.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(fd);
    REQUIRE(::write(fd.get(), "REAL", 4) == 4);
  }
  ChildResult r = run_in_child([&] {
    auto create = [](const std::string& path) {
      UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      return fd ? 0 : errno;
    };
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) return 10;
    sandbox::BuildDomain domain;
    domain.writable_dirs = {own + "/", "/nonexistent/skipped"};
    domain.writable_files = {"/dev/null"};
    if (!sandbox::apply_build_domain(probe, domain).filesystem) return 11;
    // Its own directory: files, directories, renames within it.
    if (create(own + "/a") != 0) return 20;
    if (::mkdir((own + "/d").c_str(), 0755) != 0) return 21;
    if (::rename((own + "/a").c_str(), (own + "/d/b").c_str()) != 0) return 22;
    if (::unlink((own + "/d/b").c_str()) != 0) return 23;
    // The device.
    UniqueFd null(::open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC));
    if (!null) return 24;
    // Elsewhere: no new file, no write, no truncation, no removal, no rename into or out of it.
    test_support::report("create " + std::to_string(create(other + "/planted.pth")) + "\n");
    if (create(other + "/planted.pth") != EACCES) return 30;
    if (UniqueFd w(::open(victim.c_str(), O_WRONLY | O_CLOEXEC)); w || errno != EACCES) return 31;
    if (probe.abi >= sandbox::kFirstTruncateAbi && (::truncate(victim.c_str(), 0) == 0 || errno != EACCES)) return 32;
    if (::unlink(victim.c_str()) == 0 || errno != EACCES) return 33;
    if (create(own + "/c") != 0) return 34;
    if (::rename((own + "/c").c_str(), (other + "/c").c_str()) == 0) return 35;
    if (::rename(victim.c_str(), (own + "/stolen").c_str()) == 0) return 36;
    if (::mkdir((other + "/d").c_str(), 0755) == 0 || errno != EACCES) return 37;
    if (create("/tmp/mpes-test-build-planted") != EACCES) return 38;
    return 0;
  });
  INFO(r.describe());
  CHECK(r.exited(0));
  std::string content(8, '\0');
  {
    UniqueFd fd(::open(victim.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd);
    content.resize(static_cast<std::size_t>(::read(fd.get(), content.data(), content.size())));
  }
  CHECK(content == "REAL");
  CHECK(::access((other + "/planted.pth").c_str(), F_OK) != 0);
  ::unlink("/tmp/mpes-test-build-planted");
  ::unlink(victim.c_str());
  ::unlink((own + "/c").c_str());
  ::rmdir((own + "/d").c_str());
  ::rmdir(own.c_str());
  ::rmdir(other.c_str());
}
