#include "sandbox/user_quotas.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/read_file.h"
#include "sandbox/setup_error.h"

namespace sandbox {
namespace {

std::optional<std::uint64_t> read_number(const char* path) {
  const auto text = read_file(path, 64);
  return text ? parse_u64(*text) : std::nullopt;
}

std::optional<std::uint64_t> smaller(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

std::uint64_t share(std::optional<std::uint64_t> pool, unsigned sandboxes) {
  if (!pool || *pool == 0) return 0;
  return std::max<std::uint64_t>(1, *pool / 2 / std::max(1u, sandboxes));
}

void write_quota(const char* path, std::uint64_t value) {
  if (value == 0) return;
  const int err = write_file(path, std::to_string(value));
  if (err != 0 && err != ENOENT) {
    throw SetupError(std::string("sandbox: set the run's ") + path + ": " + std::strerror(err));
  }
}

}  // namespace

UserQuotaPools read_user_quota_pools() {
  rlimit pending{};
  std::optional<std::uint64_t> pending_pool;
  if (::getrlimit(RLIMIT_SIGPENDING, &pending) == 0 && pending.rlim_cur != RLIM_INFINITY) {
    pending_pool = pending.rlim_cur;
  }
  return {smaller(read_number("/proc/sys/fs/inotify/max_user_instances"),
                  read_number("/proc/sys/user/max_inotify_instances")),
          smaller(read_number("/proc/sys/fs/inotify/max_user_watches"),
                  read_number("/proc/sys/user/max_inotify_watches")),
          pending_pool};
}

UserQuotas share_user_quotas(const UserQuotaPools& pools, unsigned sandboxes) {
  return {share(pools.inotify_instances, sandboxes), share(pools.inotify_watches, sandboxes),
          share(pools.pending_signals, sandboxes)};
}

std::string describe_user_quotas(const UserQuotas& quotas, const UserQuotaPools& pools, unsigned sandboxes) {
  auto part = [](std::uint64_t mine, std::optional<std::uint64_t> pool, const char* what) {
    if (mine == 0) return std::string(what) + ": the kernel's limit (the pool is unknown)";
    return std::to_string(mine) + " " + what + " (of the host user's " + std::to_string(*pool) + ")";
  };
  return "each run and session may hold " + part(quotas.inotify_instances, pools.inotify_instances, "inotify instances") +
         ", " + part(quotas.inotify_watches, pools.inotify_watches, "inotify watches") + " and " +
         part(quotas.pending_signals, pools.pending_signals, "queued signals") + ": half of each pool shared by " +
         std::to_string(sandboxes) + " sandboxes at once (runs in flight and sessions)";
}

void apply_user_quotas(const UserQuotas& quotas) {
  write_quota("/proc/sys/user/max_inotify_instances", quotas.inotify_instances);
  write_quota("/proc/sys/user/max_inotify_watches", quotas.inotify_watches);
  if (quotas.pending_signals != 0) {
    const rlimit share{quotas.pending_signals, quotas.pending_signals};
    if (::setrlimit(RLIMIT_SIGPENDING, &share) != 0) {
      throw SetupError(std::string("sandbox: set the run's RLIMIT_SIGPENDING: ") + std::strerror(errno));
    }
  }
}

}  // namespace sandbox
