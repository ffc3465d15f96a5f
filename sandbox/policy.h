// What a sandboxed run may do: the one description of isolation shared by the server (which
// builds the zygote's bubblewrap command from it) and the zygote (which applies the per-child
// parts after fork). Plain data; serialised over the zygote protocol as flags/numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandbox {

enum class Backend { native, docker, none };

struct Limits {
  std::uint64_t memory_bytes = 1024ull << 20;   // --memory-limit-mb
  std::uint32_t max_processes = 128;             // --max-processes
  std::uint64_t tmpfs_bytes = 256ull << 20;      // --tmpfs-size-mb (work dir and /tmp each)
  std::uint32_t cpu_seconds = 0;                 // --cpu-limit-seconds; 0 = the run's wall timeout
  std::uint64_t file_size_bytes = 256ull << 20;  // RLIMIT_FSIZE
  std::uint32_t open_files = 256;                // RLIMIT_NOFILE
};

struct Policy {
  Backend backend = Backend::native;
  bool network = true;  // --network on|off; off = fresh net namespace with loopback only
  Limits limits;
  // Read-only host paths the zygote (and so every run) sees at the same path: the interpreter
  // prefix, environments, etc. /usr and the /etc allowlist are added by the builder itself.
  std::vector<std::string> ro_paths;
};

}  // namespace sandbox

#include <optional>
#include <string_view>
namespace sandbox {
std::optional<Backend> parse_backend(std::string_view name);  // "native" | "docker" | "none"
std::string_view to_string(Backend backend);
}  // namespace sandbox
