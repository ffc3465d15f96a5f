// The server process: the MCP server on stdio or Streamable HTTP, and the one-shot --run mode.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "engine/event_loop.h"
#include "mcp/cli.h"
#include "mcp/stdio_guard.h"
#include "engine/engine.h"

namespace mcp {

// Replaceable parts, so tests can run the whole server against a fake engine.
struct ServerHooks {
  std::function<std::unique_ptr<engine::Engine>(asio::io_context&, const engine::EngineConfig&)>
      make_engine;                        // default: engine::make_engine
  bool handle_signals = true;               // SIGTERM/SIGINT/SIGHUP end the server
};

// Serves MCP over `fds`. At end of input, finishes the calls already read, then stops; on a
// termination signal stops at once: stops accepting work, ends every run (Engine::shutdown) and
// returns 0, within 2 s.
int serve_stdio(const CliOptions& options, ProtocolFds fds, ServerHooks hooks = {});

// Serves MCP over Streamable HTTP (options.http) until a termination signal (or `stop`, for
// tests); then stops accepting connections and requests, ends every run, writes the answers of
// the runs in flight and returns 0, within 2 s. Returns 1 when it cannot listen. `on_listening`
// gets the bound port.
int serve_http(const CliOptions& options, ServerHooks hooks = {},
               std::function<void(std::uint16_t port, std::function<void()> stop)> on_listening = {});

// --run FILE: one run through the same engine; the result text goes to `out`. Returns the
// script's exit code (128+N when killed by signal N), 125 when the service itself failed.
int run_once(const CliOptions& options, sandbox::UniqueFd out, ServerHooks hooks = {});

// Instructions sent in the initialize result.
std::string server_instructions(const engine::EngineConfig& config);

}  // namespace mcp
