// The host probe: what it reports matches what this host really does, and when the native
// backend cannot run it says what is wrong and how to fix it.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "sandbox/probe.h"

namespace {

std::string shell(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 256> buf{};
  while (pipe && fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  return out;
}

// A directory 65534 can enter, holding a fake bwrap with the given body.
struct FakeBwrap {
  std::string dir;
  std::string path;
  explicit FakeBwrap(const std::string& body) {
    char tmpl[] = "/tmp/mpes-fake-bwrap-XXXXXX";
    dir = mkdtemp(tmpl);
    chmod(dir.c_str(), 0755);
    path = dir + "/bwrap";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
  }
  ~FakeBwrap() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

}  // namespace

TEST_CASE("probe_host reports this host's bwrap, user namespaces and seccomp", "[probe]") {
  const auto r = sandbox::probe_host(sandbox::Policy{});
  INFO(r.problem << " / " << r.fix);
  const std::string which = shell("command -v bwrap");
  if (which.empty()) {
    CHECK(r.bwrap_path.empty());
    CHECK_FALSE(r.native_ready());
    return;
  }
  CHECK(r.bwrap_path + "\n" == which);
  // The version as bwrap itself prints it.
  CHECK(shell(r.bwrap_path + " --version") == "bubblewrap " + r.bwrap_version + "\n");
  CHECK(r.seccomp_available);
  // The user-namespace verdict agrees with running bwrap by hand (as 65534 when root).
  const std::string run_as = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const bool by_hand = shell(run_as + r.bwrap_path +
                             " --unshare-all --ro-bind / / --proc /proc --dev /dev true "
                             "2>/dev/null && echo ok") == "ok\n";
  CHECK(r.userns_works == by_hand);
  if (r.nested_userns_checked) {
    const bool nested_by_hand =
        shell(run_as + r.bwrap_path +
              " --unshare-all --ro-bind / / --proc /proc --dev /dev unshare --user --pid --mount "
              "--fork true 2>/dev/null && echo ok") == "ok\n";
    CHECK(r.nested_userns_works == nested_by_hand);
  }
  const bool nested_ok = !r.nested_userns_checked || r.nested_userns_works;
  CHECK(r.native_ready() == (r.userns_works && nested_ok && r.seccomp_available));
  CHECK(r.native_ready() == r.fix.empty());
  CHECK_FALSE(r.cgroup_mode.empty());
  CHECK_FALSE(r.memory_limit_mechanism.empty());
  CHECK_FALSE(r.process_limit_mechanism.empty());
  CHECK_THAT(r.file_size_limit_mechanism, Catch::StartsWith("RLIMIT_FSIZE"));
  CHECK_THAT(r.cpu_limit_mechanism, Catch::StartsWith("RLIMIT_CPU"));
}

TEST_CASE("probe mechanisms follow the cgroup setup", "[probe]") {
  sandbox::Policy policy;
  policy.limits.memory_bytes = 512ull << 20;
  policy.limits.max_processes = 64;
  sandbox::CgroupSetup none;
  const auto fallback = sandbox::probe_host(policy, none);
  CHECK_THAT(fallback.memory_limit_mechanism, Catch::StartsWith("RLIMIT_DATA") &&
                                                  Catch::Contains("512 MiB"));
  CHECK_THAT(fallback.process_limit_mechanism, Catch::StartsWith("RLIMIT_NPROC") &&
                                                   Catch::Contains("64"));
  CHECK(fallback.cgroup_mode == "none");

  sandbox::CgroupSetup v1;
  v1.version = sandbox::CgroupVersion::v1;
  v1.memory_parent = "/sys/fs/cgroup/memory/x";
  v1.pids_parent = "/sys/fs/cgroup/pids/x";
  v1.swap_limited = true;
  const auto with_cgroups = sandbox::probe_host(policy, v1);
  CHECK_THAT(with_cgroups.memory_limit_mechanism,
             Catch::Contains("memory.limit_in_bytes") && Catch::Contains("512 MiB"));
  CHECK_THAT(with_cgroups.process_limit_mechanism, Catch::Contains("pids.max"));
  CHECK_THAT(with_cgroups.cgroup_mode, Catch::StartsWith("v1 memory+pids"));
}

TEST_CASE("without bwrap the probe says to install bubblewrap", "[probe]") {
  const auto r = sandbox::probe_host(sandbox::Policy{}, sandbox::CgroupSetup{}, "");
  CHECK_FALSE(r.native_ready());
  CHECK_THAT(r.problem, Catch::Contains("bubblewrap"));
  CHECK_THAT(r.fix, Catch::Contains("apt-get install bubblewrap"));
}

TEST_CASE("a bwrap that cannot create namespaces is reported with bwrap's words and a fix",
          "[probe]") {
  FakeBwrap fake(R"(case "$1" in
  --version) echo "bubblewrap 0.0.1" ;;
  --help) echo "usage: bwrap" ;;
  *) echo "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2; exit 1 ;;
esac)");
  const auto r = sandbox::probe_host(sandbox::Policy{}, sandbox::CgroupSetup{}, fake.path);
  CHECK(r.bwrap_version == "0.0.1");
  CHECK_FALSE(r.userns_works);
  CHECK_FALSE(r.native_ready());
  CHECK_THAT(r.problem, Catch::Contains("No permissions to create new namespace"));
  CHECK_FALSE(r.fix.empty());
}

TEST_CASE("a host where runs cannot nest user namespaces is not ready", "[probe]") {
  if (access("/usr/bin/unshare", X_OK) != 0) {
    WARN("no /usr/bin/unshare: the nested check is skipped on this host");
    return;
  }
  FakeBwrap fake(R"(case "$*" in
  *--version*) echo "bubblewrap 0.0.2" ;;
  *"/usr/bin/unshare --user"*) echo "unshare: unshare failed: No space left on device" >&2; exit 1 ;;
  *) exit 0 ;;
esac)");
  const auto r = sandbox::probe_host(sandbox::Policy{}, sandbox::CgroupSetup{}, fake.path);
  CHECK(r.userns_works);
  CHECK(r.nested_userns_checked);
  CHECK_FALSE(r.nested_userns_works);
  CHECK_FALSE(r.native_ready());
  CHECK_THAT(r.problem, Catch::Contains("No space left on device"));
  CHECK_THAT(r.fix, Catch::Contains("max_user_namespaces"));
}
