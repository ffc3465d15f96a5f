#include "sandbox/seccomp_filter.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

namespace sandbox {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;


[[noreturn]] void fail(const std::string& what, int rc) {
  throw SetupError("sandbox: seccomp filter: " + what + ": " + std::strerror(rc < 0 ? -rc : rc));
}

// Syscalls a run never needs and that widen the kernel's attack surface or reach outside the
// sandbox. Names unknown to this libseccomp are resolved to nothing and skipped: the blanket
// ENOSYS rule for unknown numbers below covers them.
constexpr std::array kDeniedSyscalls = {
    "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "open_by_handle_at", "name_to_handle_at", "acct", "quotactl",
    "quotactl_fd", "lookup_dcookie", "uselib", "fanotify_init", "syslog", "vhangup",
};

constexpr std::uint64_t kNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC |
                                          CLONE_NEWCGROUP;
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

void add(void* ctx, std::uint32_t action, int nr, const char* what,
         std::initializer_list<scmp_arg_cmp> cmps = {}) {
  const int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(cmps.size()),
                                        cmps.size() ? cmps.begin() : nullptr);
  if (rc != 0) fail(std::string("adding the rule for ") + what, rc);
}

int resolve(const char* name) { return seccomp_syscall_resolve_name(name); }

// The compiled program of `c` as a struct sock_filter array, through a memfd (libseccomp 2.5
// has no in-memory export).
std::vector<std::uint8_t> export_bpf(void* c) {
  UniqueFd mem(static_cast<int>(syscall(SYS_memfd_create, "mpes-seccomp", MFD_CLOEXEC)));
  if (!mem) fail("memfd_create", errno);
  if (int rc = seccomp_export_bpf(c, mem.get()); rc != 0) fail("exporting the BPF program", rc);
  struct stat st {};
  if (fstat(mem.get(), &st) != 0) fail("fstat of the exported program", errno);
  std::vector<std::uint8_t> bpf(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < bpf.size()) {
    const ssize_t n = pread(mem.get(), bpf.data() + got, bpf.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("reading the exported program", n < 0 ? errno : EIO);
    got += static_cast<std::size_t>(n);
  }
  if (bpf.empty() || bpf.size() % sizeof(sock_filter) != 0) {
    throw SetupError("sandbox: seccomp filter: libseccomp exported a malformed program");
  }
  return bpf;
}

}  // namespace

SeccompProgram SeccompProgram::export_program(void* c) {
  SeccompProgram program;
  program.bpf_ = export_bpf(c);
  return program;
}

SeccompProgram SeccompProgram::compile_no_network() {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw SetupError("sandbox: seccomp_init failed (is libseccomp usable here?)");
  void* c = ctx.get();
  if (int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0) {
    fail("setting the bad-architecture action", rc);
  }
  // Every family but AF_UNIX (socketpair makes AF_UNIX sockets only), compared on all 64 bits:
  // a domain with high bits set is refused too. EACCES: socket(2)'s "not permitted to create a
  // socket of this type", which Python raises as PermissionError.
  add(c, SCMP_ACT_ERRNO(EACCES), resolve("socket"), "socket",
      {SCMP_A0(SCMP_CMP_NE, static_cast<std::uint64_t>(AF_UNIX))});
  return export_program(c);
}

SeccompProgram SeccompProgram::compile(const Policy& /*policy*/) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw SetupError("sandbox: seccomp_init failed (is libseccomp usable here?)");
  void* c = ctx.get();

  // Only the native ABI: a syscall through int 0x80 (i386) or with the x32 bit kills the process.
  if (int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0) {
    fail("setting the bad-architecture action", rc);
  }
  // Binary-tree dispatch: fewer instructions per syscall with a long deny list.
  seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);

  const std::uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDeniedSyscalls) {
    const int nr = resolve(name);
    if (nr == __NR_SCMP_ERROR) continue;
    add(c, eperm, nr, name);
  }

  // New namespaces: any namespace flag makes unshare/clone fail. Other flags stay usable
  // (threads, fork, vfork, posix_spawn).
  for (std::uint64_t bit = 1; bit != 0; bit <<= 1) {
    if ((kNamespaceFlags & bit) == 0) continue;
    add(c, eperm, resolve("clone"), "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit)});
    add(c, eperm, resolve("unshare"), "unshare", {SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit)});
  }
  // CLONE_PARENT: the new process would be its caller's sibling, a child of whatever started
  // the caller, out of reach of what ends a run's or a session step's processes (a session
  // step's holder kills its own children, not its parent's).
  add(c, eperm, resolve("clone"), "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_PARENT, CLONE_PARENT)});
  // CLONE_NEWTIME's bit is part of the exit-signal byte for clone(), so only unshare checks it.
  add(c, eperm, resolve("unshare"), "unshare",
      {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME, CLONE_NEWTIME)});
  // clone3 takes its flags in memory, out of a filter's reach: ENOSYS makes glibc use clone.
  add(c, SCMP_ACT_ERRNO(ENOSYS), resolve("clone3"), "clone3");

  // Linux AIO draws on one host-wide pool of events (fs.aio-max-nr, 65,536): a run taking it
  // whole would leave every other run and the host's own processes, root's too, without.
  // ENOSYS, a kernel built without AIO, is what libaio's users fall back from; Python's standard
  // library never uses it.
  for (const char* name : {"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents"}) {
    const int nr = resolve(name);
    if (nr != __NR_SCMP_ERROR) add(c, SCMP_ACT_ERRNO(ENOSYS), nr, name);
  }
  // SysV SHM_LOCK locks a segment against the host user's locked-memory limit, which every run
  // and the host's own processes of that user share. The command compared without IPC_64.
  add(c, eperm, resolve("shmctl"), "shmctl",
      {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL & ~0x100ULL, static_cast<std::uint64_t>(SHM_LOCK))});

  // Terminal injection. The kernel reads the request as 32 bits, so compare only those: a
  // request with high bits set must not slip through.
  for (const auto request : {static_cast<std::uint64_t>(TIOCSTI),
                             static_cast<std::uint64_t>(TIOCLINUX)}) {
    add(c, eperm, resolve("ioctl"), "ioctl",
        {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, request)});
  }

  // Socket families (domain is an int to the kernel: compare the low 32 bits).
  const std::uint32_t no_family = SCMP_ACT_ERRNO(EAFNOSUPPORT);
  for (const int family : {AF_VSOCK, AF_ALG, AF_PACKET}) {
    add(c, no_family, resolve("socket"), "socket",
        {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, static_cast<std::uint64_t>(family))});
  }
  // Netlink: only NETLINK_ROUTE (protocol 0). Any other 64-bit protocol value is refused,
  // which covers every protocol whose low 32 bits are not 0.
  add(c, eperm, resolve("socket"), "socket",
      {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, static_cast<std::uint64_t>(AF_NETLINK)),
       SCMP_A2(SCMP_CMP_NE, static_cast<std::uint64_t>(NETLINK_ROUTE))});

  // Syscalls newer than this libseccomp (and so than its name table): ENOSYS, the answer
  // programs expect from an older kernel, so they fall back. Covers e.g. listmount/statmount
  // and open_tree_attr on kernels newer than the filter.
  int highest_known = 0;
  for (int nr = 0; nr < 1024; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name != nullptr) {
      highest_known = nr;
      free(name);  // NOLINT: allocated by libseccomp with malloc
    }
  }
  for (int nr = highest_known + 1; nr < highest_known + 64; ++nr) {
    add(c, SCMP_ACT_ERRNO(ENOSYS), nr, "a syscall unknown to libseccomp");
  }

  return export_program(c);
}

void SeccompProgram::install() const {
  if (bpf_.empty()) throw SetupError("sandbox: seccomp filter: no compiled program to install");
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(bpf_.size() / sizeof(sock_filter));
  // The kernel copies the program; it only reads through this pointer.
  prog.filter = reinterpret_cast<sock_filter*>(const_cast<std::uint8_t*>(bpf_.data()));
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0UL, 0UL) != 0) {
    const int err = errno;
    throw SetupError(std::string("sandbox: installing the seccomp filter failed: ") +
                     std::strerror(err) +
                     (err == EACCES ? " (no_new_privs must be set first)" : "") +
                     (err == EINVAL ? " (kernel without CONFIG_SECCOMP_FILTER?)" : ""));
  }
}

}  // namespace sandbox
