#include "sandbox/namespaces.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

namespace sandbox {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw SetupError("sandbox: " + what + ": " + std::strerror(err));
}

void write_file(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) fail(std::string("open ") + path, errno);
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) fail(std::string("write ") + path, errno);
  if (static_cast<std::size_t>(n) != text.size()) fail(std::string("short write to ") + path, EIO);
}

}  // namespace

unsigned long run_namespace_flags(bool own_network) {
  unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                        CLONE_NEWCGROUP;
  if (own_network) flags |= CLONE_NEWNET;
  return flags;
}

pid_t clone_into(unsigned long namespace_flags, int* pidfd) {
  *pidfd = -1;
  // x86_64 and aarch64 both take (flags, stack, parent_tid, ...); CLONE_PIDFD stores the pidfd
  // through parent_tid. A null stack makes the child continue on a copy of ours, like fork().
  const long r = ::syscall(SYS_clone, namespace_flags | CLONE_PIDFD | SIGCHLD, nullptr, pidfd,
                           nullptr, nullptr);
  return static_cast<pid_t>(r);
}

void write_id_maps(uid_t inside_uid, gid_t inside_gid, uid_t outside_uid, gid_t outside_gid) {
  write_file("/proc/self/uid_map",
             std::to_string(inside_uid) + " " + std::to_string(outside_uid) + " 1\n");
  write_file("/proc/self/setgroups", "deny\n");
  write_file("/proc/self/gid_map",
             std::to_string(inside_gid) + " " + std::to_string(outside_gid) + " 1\n");
}

void bring_up_loopback() {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) fail("socket for loopback setup", errno);
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) < 0) fail("read loopback flags", errno);
  req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) < 0) fail("bring loopback up", errno);
}

}  // namespace sandbox
