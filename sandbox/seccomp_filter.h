// The syscall filter: compiled once (in the zygote, before any fork) with libseccomp, installed
// in each child as the last step before user code.
//
// Denied (EPERM unless noted): new namespaces through unshare/clone (clone3 -> ENOSYS, so glibc
// falls back to clone, whose flags we can inspect), setns, the mount family, ptrace and
// process_vm_*, bpf, perf_event_open, the keyring, userfaultfd, io_uring, kexec, modules,
// reboot, swap, handle-based opens, the TIOCSTI/TIOCLINUX ioctls (compared on the low 32 bits,
// as the kernel does), sockets of the families AF_VSOCK, AF_ALG, AF_PACKET (EAFNOSUPPORT) and
// AF_NETLINK other than NETLINK_ROUTE, and syscalls newer than this libseccomp knows (ENOSYS).
// Any non-native ABI (i386 int 0x80, x32) kills the process.
//
// NETLINK_ROUTE stays allowed because glibc's getaddrinfo(AI_ADDRCONFIG), if_nameindex and
// getifaddrs use it (Python: socket.getaddrinfo, socket.if_nameindex); it only reads the run's
// own network namespace and changing anything there needs CAP_NET_ADMIN, which the run lacks.
#pragma once

#include <cstdint>
#include <vector>

#include "sandbox/policy.h"

namespace sandbox {

class SeccompProgram {
 public:
  static SeccompProgram compile(const Policy& policy);  // throws SetupError
  // A filter stacked on the runs' for the processes of a build from source with --network off:
  // socket() of any family but AF_UNIX fails with EACCES (no TCP, UDP, raw, netlink...). Throws
  // SetupError.
  static SeccompProgram compile_no_network();
  void install() const;  // in the child; requires no_new_privs; throws SetupError
  bool empty() const { return bpf_.empty(); }
  // The exported program (struct sock_filter array), e.g. for bwrap's --seccomp FD.
  const std::vector<std::uint8_t>& bpf() const { return bpf_; }

 private:
  static SeccompProgram export_program(void* ctx);  // a libseccomp context's program
  std::vector<std::uint8_t> bpf_;  // exported BPF program (struct sock_filter array)
};

}  // namespace sandbox
