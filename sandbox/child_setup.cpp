#include "sandbox/child_setup.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/cgroup.h"
#include "sandbox/identity.h"
#include "sandbox/landlock.h"
#include "sandbox/namespaces.h"
#include "sandbox/setup_error.h"
#include "sandbox/user_quotas.h"

namespace sandbox {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw SetupError("sandbox: " + what + ": " + std::strerror(err));
}

}  // namespace

void prepare_run_namespace(const ChildSpec& spec) {
  if (!spec.isolate) return;
  write_id_maps(kRunUid, kRunGid, spec.outside_uid, spec.outside_gid);
  if (spec.own_network) bring_up_loopback();
  RunMountPlan plan = spec.mounts;
  plan.owner_uid = kRunUid;
  plan.owner_gid = kRunGid;
  setup_run_mounts(plan);
  apply_user_quotas(spec.user_quotas);
  seal_run_proc();
}

void prepare_run_process(const ChildSpec& spec) {
  if (!spec.isolate) return;
  // Depends on nothing of the run: done ahead (~80 prctl calls off the run's critical path).
  drop_identity();
  // Needs no_new_privs (just set). Made per script process, not in the zygote: each run (each
  // session: its steps are forked from it) is a domain of its own, and no other run's.
  apply_run_scoping(spec.landlock_scoped);
  // Everything after this (the run's fds, cgroup join, rlimits) is allowed by the filter.
  if (spec.seccomp != nullptr && !spec.seccomp->empty()) spec.seccomp->install();
}

void lock_down(const ChildSpec& spec) {
  // Before anything of the run exists: every process it starts is counted and limited.
  // (The kernel checks the rights of whoever opened the cgroup fds, so no capability is needed.)
  if (!spec.cgroup_join_fds.empty()) join_cgroups(spec.cgroup_join_fds);
  if (!spec.isolate) return;
  apply_rlimits(spec.limits, spec.timeout_seconds, spec.rlimit_fallbacks);
}

namespace {

// place_fds; `close_copies`: close the copies made on the way (arrange_fds' close_range does).
void place(std::span<const int> wanted, bool close_copies) {
  // Move every wanted fd above the target range first, so no dup2 clobbers a later source.
  const int base = static_cast<int>(wanted.size()) + 3;
  std::vector<int> moved(wanted.size(), -1);
  int null_fd = -1;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    int src = wanted[i];
    if (src < 0) {
      if (null_fd < 0) null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (null_fd < 0) fail("open /dev/null", errno);
      src = null_fd;
    }
    moved[i] = ::fcntl(src, F_DUPFD_CLOEXEC, base);
    if (moved[i] < 0) fail("duplicate fd", errno);
  }
  for (std::size_t i = 0; i < moved.size(); ++i) {
    if (::dup2(moved[i], static_cast<int>(i)) < 0) fail("dup2", errno);  // clears close-on-exec
  }
  if (!close_copies) return;
  for (const int fd : moved) ::close(fd);
  if (null_fd >= 0 && null_fd >= static_cast<int>(wanted.size())) ::close(null_fd);
}

}  // namespace

void place_fds(std::span<const int> wanted) { place(wanted, true); }

void arrange_fds(std::span<const int> wanted) {
  place(wanted, false);
  if (::syscall(SYS_close_range, static_cast<unsigned>(wanted.size()), ~0U, 0U) != 0) {
    // Older kernels: close one by one.
    const long max = ::sysconf(_SC_OPEN_MAX);
    for (long fd = static_cast<long>(wanted.size()); fd < max; ++fd) ::close(static_cast<int>(fd));
  }
}

}  // namespace sandbox
