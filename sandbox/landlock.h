// Run scoping with Landlock: each run (a session: each session) is a Landlock domain of its own
// that handles no filesystem or network access right, only `scoped` (ABI >= 6, Linux 6.12):
// LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (no connect/sendto to an abstract unix socket bound by a
// process outside the domain: not another run's, even of the same zygote and network namespace,
// not the host's when runs share its network namespace) and LANDLOCK_SCOPE_SIGNAL (no signal to
// a process outside it). The script's own children inherit the domain, so they still reach its
// sockets. Where the kernel (or a seccomp profile) gives no scoping, runs go unscoped and
// check_environment says so ("Run scoping: unavailable: ...").
// Builds from source get a domain of another kind (apply_build_domain, below): writes confined
// to their own directories, and with --network off no TCP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandbox {

// LANDLOCK_SCOPE_* of <linux/landlock.h> >= 6.12 (older headers lack them).
inline constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr std::uint64_t kScopeSignal = 1ULL << 1;
inline constexpr int kFirstScopingAbi = 6;
// LANDLOCK_ACCESS_NET_* (ABI >= 4, Linux 6.7).
inline constexpr std::uint64_t kNetBindTcp = 1ULL << 0;
inline constexpr std::uint64_t kNetConnectTcp = 1ULL << 1;
inline constexpr int kFirstNetworkAbi = 4;

// What the kernel answered to landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION).
struct LandlockProbe {
  int abi = 0;    // > 0: the ABI version
  int error = 0;  // when abi == 0: the errno (ENOSYS, EOPNOTSUPP, EPERM under a seccomp profile...)
};
LandlockProbe probe_landlock();  // one syscall

// What each run gets: the pure decision from the probe.
struct RunScoping {
  std::uint64_t scoped = 0;  // the scopes every run's domain restricts; 0 = no domain made
  std::string description;   // "landlock ABI 7 (abstract unix sockets, signals)", "unavailable: ..."
  bool applied() const { return scoped != 0; }
};
RunScoping plan_run_scoping(bool isolate, const LandlockProbe& probe);

// In the run's process, after no_new_privs (drop_identity): makes it (and every process it
// starts) a new Landlock domain with `scoped`. Nothing when scoped == 0. Throws SetupError.
void apply_run_scoping(std::uint64_t scoped);

// LANDLOCK_ACCESS_FS_* that write (ABI 1; REFER from ABI 2, Linux 5.19; TRUNCATE from ABI 3, 6.2).
inline constexpr std::uint64_t kFsWriteFile = 1ULL << 1;
inline constexpr std::uint64_t kFsRemoveDir = 1ULL << 4;
inline constexpr std::uint64_t kFsRemoveFile = 1ULL << 5;
inline constexpr std::uint64_t kFsMakeChar = 1ULL << 6;
inline constexpr std::uint64_t kFsMakeDir = 1ULL << 7;
inline constexpr std::uint64_t kFsMakeReg = 1ULL << 8;
inline constexpr std::uint64_t kFsMakeSock = 1ULL << 9;
inline constexpr std::uint64_t kFsMakeFifo = 1ULL << 10;
inline constexpr std::uint64_t kFsMakeBlock = 1ULL << 11;
inline constexpr std::uint64_t kFsMakeSym = 1ULL << 12;
inline constexpr std::uint64_t kFsRefer = 1ULL << 13;
inline constexpr std::uint64_t kFsTruncate = 1ULL << 14;
inline constexpr int kFirstTruncateAbi = 3;

// Every right of this ABI that changes the filesystem (reading and executing are not among them).
std::uint64_t filesystem_write_rights(int abi);

// The Landlock domain of a build from source (engine/environments/build_python.h): it reads and
// executes whatever its sandbox shows, but writes only beneath `writable_dirs` and into the
// device files `writable_files` (/dev/null...); other paths, the environment being built among
// them, refuse every change with EACCES (a rename across directories with EXDEV, so that tools
// fall back to copying). With `network` false, also no TCP bind or connect (ABI >= 4). Where the
// kernel scopes (ABI >= 6), no abstract unix socket or signal outside the build. Any domain also
// keeps the build from ptrace-class access (/proc/PID/mem) to the installer that started it,
// which is outside the domain. A path that does not exist is skipped.
struct BuildDomain {
  std::vector<std::string> writable_dirs;
  std::vector<std::string> writable_files;
  bool network = true;
};
// What apply_build_domain could enforce on this kernel.
struct BuildDomainApplied {
  bool filesystem = false;  // writes confined (ABI >= 1)
  bool network = false;     // TCP refused (ABI >= 4, when asked)
};
// After no_new_privs. Nothing below ABI 1. Throws SetupError.
BuildDomainApplied apply_build_domain(const LandlockProbe& probe, const BuildDomain& domain);

// What builds from source get on this kernel, for the log and check_environment.
struct BuildConfinement {
  bool confined = false;    // their writes are confined
  std::string description;  // "landlock ABI 7: each build writes only its own directories", "unavailable: ..."
};
BuildConfinement plan_build_confinement(const LandlockProbe& probe);

}  // namespace sandbox
