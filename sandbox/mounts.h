// The run's own filesystem view, built by the run's init inside its fresh mount namespace on top
// of the zygote's read-only bubblewrap view: a size-capped tmpfs work dir (cwd, $HOME, $TMPDIR),
// a fresh /tmp and /dev/shm, and a fresh /proc of the run's pid namespace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace sandbox {

// Where a run works; also its $HOME and $TMPDIR. The bubblewrap view creates the mount point.
inline constexpr const char* kRunWorkDir = "/home/sandbox";

struct RunMountPlan {
  std::string work_dir = kRunWorkDir;
  std::uint64_t tmpfs_bytes = 256ull << 20;  // each of work dir, /tmp and /dev/shm
  uid_t owner_uid = 0;                       // inside ids owning the work dir
  gid_t owner_gid = 0;
};

// Requires CAP_SYS_ADMIN in the user namespace owning the current mount namespace (the run's
// init right after its user namespace maps). Leaves the caller in the work dir. Throws SetupError
// naming the mount that failed.
void setup_run_mounts(const RunMountPlan& plan);
// Then, once the init has written what it sets through the run's /proc/sys (user_quotas.h):
// /proc/sys, sysrq-trigger, irq and bus made read-only, for good. Throws SetupError.
void seal_run_proc();

// "size=...,nr_inodes=...": the tmpfs caps for a byte budget.
std::string tmpfs_size_options(std::uint64_t bytes);

}  // namespace sandbox
