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

enum class Transport { stdio, http };

// --transport http: Streamable HTTP on one endpoint, /mcp.
struct HttpOptions {
  std::string host = "127.0.0.1";   // an IP address ("localhost" is 127.0.0.1)
  std::uint16_t port = 8000;        // 0: any free port (the log says which)
  bool loopback = true;             // host is a loopback address
  std::optional<std::string> auth_token;  // from --auth-token-file: clients send it as Bearer
  bool allow_unauthenticated = false;
  unsigned max_connections = 256;   // open at once; more wait in the listen backlog
  bool max_connections_given = false;  // by --max-connections (else the default, lowered to fit)
  unsigned read_timeout_seconds = 30;  // to receive one request (headers and body); idle keep-alive
};

struct CliOptions {
  engine::EngineConfig engine;
  Transport transport = Transport::stdio;
  HttpOptions http;
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
