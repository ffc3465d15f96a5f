#include "sandbox/landlock.h"

#include <fcntl.h>
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

namespace {

// Why the kernel gives no Landlock domain (abi == 0), in words a user can act on.
std::string unavailable_reason(const LandlockProbe& probe) {
  if (probe.error == ENOSYS) {
    return "this kernel has no Landlock (ENOSYS; Linux 6.12 built with CONFIG_SECURITY_LANDLOCK has all it "
           "is used for here)";
  }
  if (probe.error == EOPNOTSUPP) {
    return "Landlock is built in but not enabled (EOPNOTSUPP; add landlock to the lsm= boot parameter)";
  }
  if (probe.error == EPERM) {
    return "the landlock syscalls are denied (EPERM), e.g. by a container's seccomp profile; allow "
           "landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (they only restrict)";
  }
  return std::string("landlock_create_ruleset failed: ") + std::strerror(probe.error);
}

}  // namespace

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
  } else {
    why = unavailable_reason(probe);
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

std::uint64_t filesystem_write_rights(int abi) {
  if (abi < 1) return 0;
  std::uint64_t rights = kFsWriteFile | kFsRemoveDir | kFsRemoveFile | kFsMakeChar | kFsMakeDir | kFsMakeReg |
                         kFsMakeSock | kFsMakeFifo | kFsMakeBlock | kFsMakeSym;
  if (abi >= 2) rights |= kFsRefer;
  if (abi >= kFirstTruncateAbi) rights |= kFsTruncate;
  return rights;
}

namespace {

constexpr int kRulePathBeneath = 1;  // LANDLOCK_RULE_PATH_BENEATH

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access = 0;
  std::int32_t parent_fd = -1;
};

// Allows `rights` beneath `path` (or on it, a file); false when the path does not exist.
bool add_path_rule(int ruleset, const std::string& path, std::uint64_t rights) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throw SetupError("sandbox: cannot open " + path + " for a build's Landlock rule: " + std::strerror(errno));
  }
  PathBeneathAttr rule;
  rule.allowed_access = rights;
  rule.parent_fd = fd.get();
  if (::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0U) != 0) {
    throw SetupError("sandbox: landlock_add_rule (a build may write " + path + ") failed: " + std::strerror(errno));
  }
  return true;
}

}  // namespace

BuildDomainApplied apply_build_domain(const LandlockProbe& probe, const BuildDomain& domain) {
  BuildDomainApplied applied;
  if (probe.abi < 1) return applied;
  RulesetAttr attr;
  attr.handled_access_fs = filesystem_write_rights(probe.abi);
  if (!domain.network && probe.abi >= kFirstNetworkAbi) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // and no rule allows any port
    applied.network = true;
  }
  if (probe.abi >= kFirstScopingAbi) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  // Older kernels reject a struct that sets what they do not know; its size is fine when zero.
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U)));
  if (!ruleset) {
    throw SetupError(std::string("sandbox: landlock_create_ruleset (a build's domain) failed: ") +
                     std::strerror(errno));
  }
  for (const auto& dir : domain.writable_dirs) add_path_rule(ruleset.get(), dir, attr.handled_access_fs);
  const std::uint64_t file_rights = attr.handled_access_fs & (kFsWriteFile | kFsTruncate);
  for (const auto& file : domain.writable_files) add_path_rule(ruleset.get(), file, file_rights);
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0U) != 0) {
    throw SetupError(std::string("sandbox: landlock_restrict_self (a build's domain) failed: ") +
                     std::strerror(errno) + " (it needs no_new_privs)");
  }
  applied.filesystem = true;
  return applied;
}

BuildConfinement plan_build_confinement(const LandlockProbe& probe) {
  BuildConfinement plan;
  if (probe.abi >= kFirstTruncateAbi) {
    plan.confined = true;
    plan.description = "landlock ABI " + std::to_string(probe.abi) + ": each build writes only its own directories";
  } else if (probe.abi > 0) {
    plan.confined = true;
    plan.description = "landlock ABI " + std::to_string(probe.abi) +
                       ": each build writes only its own directories, but may truncate a file it can "
                       "open (ABI 3, Linux 6.2, controls truncation)";
  } else {
    plan.description = "unavailable: " + unavailable_reason(probe) +
                       "; builds from source can write the environment being built";
  }
  return plan;
}

}  // namespace sandbox
