#include "sandbox/mounts.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/setup_error.h"

namespace sandbox {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw SetupError("sandbox: " + what + ": " + std::strerror(err));
}

void mount_or_fail(const char* source, const std::string& target, const char* type,
                   unsigned long flags, const std::string& data, const std::string& what) {
  if (::mount(source, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) != 0) {
    fail(what, errno);
  }
}

// Read-only bind of a path onto itself (if it exists): /proc/sys and friends stay readable
// but cannot be written even by a process that regains privileges.
void make_read_only(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  mount_or_fail(path.c_str(), path, nullptr, MS_BIND | MS_REC, "", "bind " + path);
  mount_or_fail(nullptr, path, nullptr,
                MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "",
                "remount " + path + " read-only");
}

}  // namespace

std::string tmpfs_size_options(std::uint64_t bytes) {
  const std::uint64_t inodes = std::max<std::uint64_t>(1024, bytes / 4096);
  return "size=" + std::to_string(bytes) + ",nr_inodes=" + std::to_string(inodes);
}

void setup_run_mounts(const RunMountPlan& plan) {
  // Nothing we mount may propagate back into the zygote's namespace.
  mount_or_fail(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, "", "make / private");

  const std::string caps = tmpfs_size_options(plan.tmpfs_bytes);
  mount_or_fail("tmpfs", plan.work_dir, "tmpfs", MS_NOSUID | MS_NODEV,
                caps + ",mode=0700,uid=" + std::to_string(plan.owner_uid) +
                    ",gid=" + std::to_string(plan.owner_gid),
                "mount tmpfs work dir " + plan.work_dir);
  mount_or_fail("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, caps + ",mode=1777",
                "mount tmpfs /tmp");
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    mount_or_fail("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  caps + ",mode=1777", "mount tmpfs /dev/shm");
  }
  // A /proc of the run's own pid namespace: it shows only the run's processes.
  mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "", "mount /proc");
  if (::chdir(plan.work_dir.c_str()) != 0) fail("chdir " + plan.work_dir, errno);
}

void seal_run_proc() {
  for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
    make_read_only(p);
  }
}

}  // namespace sandbox
