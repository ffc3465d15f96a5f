// Test helper: one sendmsg of `size` bytes with `fds` attached (SCM_RIGHTS), for tests that send
// what the zygote protocol's own sender would not (more fds than a message may carry, bytes that
// are no message) or that send from a sandboxed child. No allocation: at most kMaxFds fds.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>

namespace test_support {

inline constexpr std::size_t kMaxFds = 16;

// sendmsg's result; -1 with errno EINVAL when more than kMaxFds fds are given.
inline ssize_t send_with_fds(int socket_fd, const void* bytes, std::size_t size, std::span<const int> fds) {
  if (fds.size() > kMaxFds) {
    errno = EINVAL;
    return -1;
  }
  iovec iov{const_cast<void*>(bytes), size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
}

}  // namespace test_support
