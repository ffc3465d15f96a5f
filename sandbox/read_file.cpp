#include "sandbox/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

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

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

int write_file_at(int dir_fd, const char* name, std::string_view text) {
  UniqueFd fd(::openat(dir_fd, name, O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return errno;
  return 0;
}

int write_file(const std::string& path, std::string_view text) { return write_file_at(AT_FDCWD, path.c_str(), text); }

}  // namespace sandbox
