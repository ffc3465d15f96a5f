#include "mcp/stdio_guard.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcp {

std::optional<ProtocolFds> take_over_stdio(std::string* error) {
  ProtocolFds fds{sandbox::UniqueFd(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)),
                  sandbox::UniqueFd(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3))};
  if (!fds.in || !fds.out) {
    if (error) *error = std::string("stdin and stdout must be open: ") + std::strerror(errno);
    return std::nullopt;
  }
  sandbox::UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull || ::dup2(devnull.get(), STDIN_FILENO) < 0 ||
      ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    if (error) *error = std::string("cannot redirect stdin/stdout: ") + std::strerror(errno);
    return std::nullopt;
  }
  return fds;
}

}  // namespace mcp
