// The MCP session over one connection: lifecycle and version negotiation, JSON-RPC dispatch and
// errors, batches (2025-03-26 only), concurrent tool calls, cancellation, progress and logging.
// Transport-agnostic: lines in, serialized messages out through a sink. Single-threaded.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/framing.h"
#include "mcp/log_level.h"
#include "mcp/tool_registry.h"

namespace mcp {

namespace detail {
struct SessionState;
}  // namespace detail

// Newest first; the first is answered when a client asks for a version we do not speak.
inline constexpr std::array<std::string_view, 4> kSupportedProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

std::string_view negotiate_protocol_version(std::string_view requested);

struct SessionOptions {
  std::string instructions;                  // initialize result "instructions"
  LogLevel log_level = LogLevel::warning;     // until the client sends logging/setLevel
  std::string logger_name = "mcp-python-exec-sandbox";
};

class Session {
 public:
  // `sink` receives one serialized JSON-RPC message (no newline) at a time.
  using Sink = std::function<void(std::string message)>;

  Session(const ToolRegistry& tools, SessionOptions options, Sink sink);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void handle_line(std::string_view line);
  void handle_oversize(const OversizeLine& line);

  // Called once, right after the initialize response has been handed to the sink.
  void set_on_initialized(std::function<void()> callback);

  // notifications/message to the client when initialized and `level` passes logging/setLevel.
  void log(LogLevel level, nlohmann::json data);
  bool wants_log(LogLevel level) const;

  bool initialized() const;
  const std::string& protocol_version() const;  // "" before initialize
  std::size_t calls_in_flight() const;

  // Runs `callback` once no call is in flight: now, or right after the last one is answered.
  // (End of input: the requests already read are finished before the server stops.)
  void when_idle(std::function<void()> callback);

  // Shutdown, step 1: refuse new requests and ask every running call to stop; their results
  // (with the output so far) are still sent when they arrive.
  void stop_accepting_and_cancel();
  // Shutdown, step 2: answer every call still without a result with an error.
  void abandon_in_flight(const std::string& reason);

 private:
  std::shared_ptr<detail::SessionState> state_;
};

}  // namespace mcp
