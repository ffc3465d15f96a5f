// The identity layer: after drop_identity() a child has no capability in any set, no_new_privs,
// its own session, and locked securebits, both as host root and as root of a new user namespace.
#include <catch2/catch.hpp>

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "sandbox/identity.h"
#include "sandbox/setup_error.h"
#include "tests/support/sandbox_fork.h"

using test_support::ChildResult;
using test_support::run_in_child;

namespace {

// "CapEff:\t0000..." style lines of /proc/self/status, as a compact report.
std::string status_lines() {
  std::ifstream in("/proc/self/status");
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("Cap", 0) == 0 || line.rfind("NoNewPrivs", 0) == 0) out += line + "\n";
  }
  return out;
}

int bounding_caps_left() {
  int left = 0;
  for (unsigned long cap = 0; prctl(PR_CAPBSET_READ, cap, 0UL, 0UL, 0UL) >= 0; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0UL, 0UL, 0UL) == 1) ++left;
  }
  return left;
}

int check_dropped() {
  sandbox::drop_identity();
  test_support::report(status_lines());
  if (bounding_caps_left() != 0) return 10;
  if (prctl(PR_GET_NO_NEW_PRIVS, 0UL, 0UL, 0UL, 0UL) != 1) return 11;
  if (getsid(0) != getpid()) return 12;
  const int bits = prctl(PR_GET_SECUREBITS, 0UL, 0UL, 0UL, 0UL);
  if ((bits & SECBIT_NOROOT_LOCKED) == 0) return 13;
  // Capability-gated actions really fail now.
  if (sethostname("x", 1) == 0 || errno != EPERM) return 14;
  return 0;
}

bool all_zero_caps(const std::string& report) {
  for (const char* key : {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"}) {
    const auto pos = report.find(key);
    if (pos == std::string::npos) return false;
    const auto value = report.substr(pos + std::string(key).size() + 1, 16);
    if (value != "0000000000000000") return false;
  }
  return true;
}

}  // namespace

TEST_CASE("drop_identity leaves no capability, no_new_privs and a new session", "[identity]") {
  // Control: a child that does not drop still has what it started with (as root: capabilities).
  ChildResult control = run_in_child([] {
    test_support::report(status_lines());
    return 0;
  });
  REQUIRE(control.exited(0));
  if (geteuid() == 0) CHECK_FALSE(all_zero_caps(control.report));

  ChildResult r = run_in_child(check_dropped);
  INFO(r.describe());
  CHECK(r.exited(0));
  CHECK(all_zero_caps(r.report));
  CHECK_THAT(r.report, Catch::Contains("NoNewPrivs:\t1"));
}

TEST_CASE("drop_identity as root of a fresh user namespace", "[identity]") {
  ChildResult r = run_in_child([] {
    if (unshare(CLONE_NEWUSER | CLONE_NEWUTS) != 0) {
      test_support::report("unshare(CLONE_NEWUSER) not permitted here");
      return 50;
    }
    // Control inside the namespace: full capabilities, so sethostname works before the drop.
    if (sethostname("mpes", 4) != 0) return 51;
    return check_dropped();
  });
  if (r.exited(50)) {
    WARN("user namespaces unavailable: " << r.report);
    return;
  }
  INFO(r.describe());
  CHECK(r.exited(0));
  CHECK(all_zero_caps(r.report));
}

TEST_CASE("drop_identity without CAP_SETPCAP still clears what it can", "[identity]") {
  ChildResult r = run_in_child([] {
    if (geteuid() == 0 && (syscall(SYS_setresgid, 65534, 65534, 65534) != 0 ||
                           syscall(SYS_setresuid, 65534, 65534, 65534) != 0)) {
      return 60;
    }
    sandbox::drop_identity();
    test_support::report(status_lines());
    return prctl(PR_GET_NO_NEW_PRIVS, 0UL, 0UL, 0UL, 0UL) == 1 ? 0 : 61;
  });
  INFO(r.describe());
  CHECK(r.exited(0));
  CHECK_THAT(r.report, Catch::Contains("CapEff:\t0000000000000000"));
  CHECK_THAT(r.report, Catch::Contains("CapPrm:\t0000000000000000"));
}
