// Run scoping with Landlock: each run (a session: each session) is a Landlock domain of its own
// that handles no filesystem or network access right, only `scoped` (ABI >= 6, Linux 6.12):
// LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (no connect/sendto to an abstract unix socket bound by a
// process outside the domain: not another run's, even of the same zygote and network namespace,
// not the host's when runs share its network namespace) and LANDLOCK_SCOPE_SIGNAL (no signal to
// a process outside it). The script's own children inherit the domain, so they still reach its
// sockets. Where the kernel (or a seccomp profile) gives no scoping, runs go unscoped and
// check_environment says so ("Run scoping: unavailable: ...").
#pragma once

#include <cstdint>
#include <string>

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

// The Landlock domain of a build from source with --network off (engine/environments/
// build_python.h), after no_new_privs: no TCP bind or connect (ABI >= 4), and where the kernel
// scopes (ABI >= 6) no abstract unix socket or signal outside the build. Any domain also keeps
// the build from ptrace-class access (/proc/PID/mem) to the installer that started it, which is
// outside the domain. Returns false, doing nothing, below ABI 4. Throws SetupError.
bool apply_no_network_domain(const LandlockProbe& probe);

}  // namespace sandbox
