#include "sandbox/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/unique_fd.h"

namespace sandbox {

std::optional<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    if (static_cast<std::size_t>(n) > max_bytes - text.size()) return std::nullopt;
    text.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace sandbox
