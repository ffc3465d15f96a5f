#include "sandbox/landlock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

namespace sandbox {
namespace {

constexpr unsigned kCreateRulesetVersion = 1U << 0;  // LANDLOCK_CREATE_RULESET_VERSION

// struct landlock_ruleset_attr as of ABI 6 (the kernel accepts a larger struct from newer headers
// and a smaller one from older; ours must reach `scoped`).
struct RulesetAttr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;
  std::uint64_t scoped = 0;
};

const char* kUnscoped =
    "; runs are not scoped: a run can reach the abstract unix sockets of its network namespace "
    "(another run's, or the host's when runs share its network namespace)";

}  // namespace

LandlockProbe probe_landlock() {
  LandlockProbe probe;
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi > 0) {
    probe.abi = static_cast<int>(abi);
  } else {
    probe.error = abi < 0 ? errno : EINVAL;
  }
  return probe;
}

RunScoping plan_run_scoping(bool isolate, const LandlockProbe& probe) {
  RunScoping plan;
  if (!isolate) {
    plan.description = "none (--sandbox-backend none: runs are not isolated)";
    return plan;
  }
  if (probe.abi >= kFirstScopingAbi) {
    plan.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    plan.description = "landlock ABI " + std::to_string(probe.abi) + " (abstract unix sockets, signals)";
    return plan;
  }
  std::string why;
  if (probe.abi > 0) {
    why = "landlock ABI " + std::to_string(probe.abi) +
          " has no scoping (ABI 6, Linux 6.12, scopes abstract unix sockets and signals)";
  } else if (probe.error == ENOSYS) {
    why = "this kernel has no Landlock (ENOSYS; Linux 6.12 with CONFIG_SECURITY_LANDLOCK scopes runs)";
  } else if (probe.error == EOPNOTSUPP) {
    why = "Landlock is built in but not enabled (EOPNOTSUPP; add landlock to the lsm= boot parameter)";
  } else if (probe.error == EPERM) {
    why = "the landlock syscalls are denied (EPERM), e.g. by a container's seccomp profile; allow "
          "landlock_create_ruleset and landlock_restrict_self (they only restrict)";
  } else {
    why = std::string("landlock_create_ruleset failed: ") + std::strerror(probe.error);
  }
  plan.description = "unavailable: " + why + kUnscoped;
  return plan;
}

void apply_run_scoping(std::uint64_t scoped) {
  if (scoped == 0) return;
  RulesetAttr attr;
  attr.scoped = scoped;
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U)));
  if (!ruleset) {
    throw SetupError(std::string("sandbox: landlock_create_ruleset (scoping the run to its own abstract "
                                 "unix sockets and signals) failed: ") +
                     std::strerror(errno));
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0U) != 0) {
    throw SetupError(std::string("sandbox: landlock_restrict_self (scoping the run) failed: ") +
                     std::strerror(errno) + " (it needs no_new_privs, set by drop_identity)");
  }
}

bool apply_no_network_domain(const LandlockProbe& probe) {
  if (probe.abi < kFirstNetworkAbi) return false;
  RulesetAttr attr;
  attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // and no rule allows any port
  if (probe.abi >= kFirstScopingAbi) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  // An ABI 4-5 kernel rejects a struct that sets `scoped`; its size is fine when zero.
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U)));
  if (!ruleset) {
    throw SetupError(std::string("sandbox: landlock_create_ruleset (a build without network) failed: ") +
                     std::strerror(errno));
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0U) != 0) {
    throw SetupError(std::string("sandbox: landlock_restrict_self (a build without network) failed: ") +
                     std::strerror(errno) + " (it needs no_new_privs)");
  }
  return true;
}

}  // namespace sandbox
