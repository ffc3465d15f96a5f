// Kernel quotas counted per user, shared out between runs.
//
// Every run and session of a server maps to one host uid (`nobody` with the server as root, the
// server's own user otherwise), and the kernel counts some resources per host user across every
// user namespace: a run that holds all of that user's inotify instances (128 by default) would
// make every other run's `inotify_init` fail while it lives, and the host's own processes of that
// user too. The kernel also checks these counts at each user namespace level, against that
// namespace's own `/proc/sys/user/max_*` limits, which only a process with CAP_SYS_RESOURCE in
// it may set: the run's init, before its script process drops every capability. So each run's
// user namespace gets a share of the host user's pool, and the shares of every sandbox that can
// live at once (runs in flight and sessions) add up to half of it; the other half stays for the
// host's own processes of that user. A share is never below one. Queued signals (sigqueue, a
// blocked real-time signal, POSIX timers) are counted the same way, against RLIMIT_SIGPENDING at
// the run's level: its share is that limit, set by the init for the whole run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sandbox {

// What one run's user namespace may hold; 0 = the kernel's limit left as it is.
struct UserQuotas {
  std::uint64_t inotify_instances = 0;
  std::uint64_t inotify_watches = 0;
  std::uint64_t pending_signals = 0;  // RLIMIT_SIGPENDING
};

// The host user's pools: the smaller of the host's per-user limit (/proc/sys/fs/inotify/) and the
// server's own user namespace's (/proc/sys/user/); nullopt where a file is missing or unreadable.
// Queued signals: the server's own RLIMIT_SIGPENDING (its runs' user namespaces are made under
// it), nullopt when unlimited.
struct UserQuotaPools {
  std::optional<std::uint64_t> inotify_instances;
  std::optional<std::uint64_t> inotify_watches;
  std::optional<std::uint64_t> pending_signals;
};

UserQuotaPools read_user_quota_pools();

// Pure: each of `sandboxes` sandboxes' share of half of each pool, at least 1 (a pool unknown
// gives 0: left to the kernel).
UserQuotas share_user_quotas(const UserQuotaPools& pools, unsigned sandboxes);

// For logs and check_environment: what each sandbox may hold, of which pools.
std::string describe_user_quotas(const UserQuotas& quotas, const UserQuotaPools& pools, unsigned sandboxes);

// In the run's init: writes the quotas into its user namespace's /proc/sys/user/, through the
// run's own /proc, before /proc/sys is made read-only, and sets RLIMIT_SIGPENDING, which every
// process of the run inherits and none can raise. A file the kernel lacks is skipped (the quota
// does not exist there); any other failure throws SetupError.
void apply_user_quotas(const UserQuotas& quotas);

}  // namespace sandbox
