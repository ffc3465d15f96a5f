// A file read whole: procfs and cgroup files, small metadata. The one way the project reads
// them: a close-on-exec fd (an iostream cannot promise one, and the server forks while other
// threads read), reads retried on EINTR, and a bound past which the file is not the one expected.
// Also the one way it writes a value into such a file, and reads a number from one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox {

// The whole of `path`; nullopt when it cannot be opened or read, or holds more than `max_bytes`.
std::optional<std::string> read_file(const std::string& path,
                                     std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

// A decimal number as procfs and cgroup files write it (trailing newline or spaces allowed).
std::optional<std::uint64_t> parse_u64(std::string_view text);

// `text` written in one write to `name` under `dir_fd` (AT_FDCWD: a path); 0, or the errno
// (procfs and cgroup files report a rejected value from write() itself).
int write_file_at(int dir_fd, const char* name, std::string_view text);
int write_file(const std::string& path, std::string_view text);

}  // namespace sandbox
