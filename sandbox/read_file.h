// A file read whole: procfs and cgroup files, small metadata. The one way the project reads
// them: a close-on-exec fd (an iostream cannot promise one, and the server forks while other
// threads read), reads retried on EINTR, and a bound past which the file is not the one expected.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>

namespace sandbox {

// The whole of `path`; nullopt when it cannot be opened or read, or holds more than `max_bytes`.
std::optional<std::string> read_file(const std::string& path,
                                     std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

}  // namespace sandbox
