// Command line: the Python server's flags (drop-in) plus this server's engine and sandbox knobs.
// Invalid values are reported as one line naming the flag, with exit status 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace mcp {

// The largest script --run accepts: as much as an MCP message can carry (mcp/framing.h).
inline constexpr std::uint64_t kMaxRunFileBytes = std::uint64_t{16} << 20;

struct CliOptions {
  engine::EngineConfig engine;
  std::string log_level = "info";  // spdlog level for stderr
  std::optional<std::string> run_file;  // --run FILE: one-shot mode, no MCP
};

struct CliResult {
  std::optional<CliOptions> options;  // set: start; otherwise exit with exit_code
  int exit_code = 0;
  std::string stdout_text;  // --help, --version
  std::string stderr_text;  // the one-line error
};

// `args` excludes the program name.
CliResult parse_cli(const std::vector<std::string>& args);

}  // namespace mcp
