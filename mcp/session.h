// MCP over one line stream (the stdio transport), in both eras: a request carrying the
// stateless era's per-request _meta (2026-07-28) is served on its own by the StatelessHandler;
// everything else belongs to the connection's initialize-era session (LegacySession). Both
// share one table of calls in flight, so notifications/cancelled and shutdown reach every call.
// Transport-agnostic: lines in, serialized messages out through a sink. Single-threaded.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/call_table.h"
#include "mcp/era.h"
#include "mcp/framing.h"
#include "mcp/legacy_session.h"
#include "mcp/log_level.h"
#include "mcp/stateless_handler.h"
#include "mcp/tool_registry.h"

namespace mcp {

class Session {
 public:
  // `sink` receives one serialized JSON-RPC message (no newline) at a time.
  using Sink = std::function<void(std::string message)>;

  Session(const ToolRegistry& tools, SessionOptions options, Sink sink);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void handle_line(std::string_view line);
  // A line already parsed (nullopt: it was not valid JSON); `line_bytes` is its length.
  void handle_parsed(std::optional<nlohmann::json> parsed, std::size_t line_bytes);
  void handle_oversize(const OversizeLine& line);

  // Called once, right after the initialize response has been handed to the sink.
  void set_on_initialized(std::function<void()> callback);

  // A server log record: notifications/message to an initialized session whose
  // logging/setLevel lets `level` pass (stateless requests get only their own records).
  void log(LogLevel level, nlohmann::json data);
  bool wants_log(LogLevel level) const;

  bool initialized() const;
  const std::string& protocol_version() const;  // "" before initialize
  std::size_t calls_in_flight() const;

  // Each call a line starts is charged call_share_bytes(reply_bound, the line's length) of the
  // intake bound (mcp/intake.h) while it is in flight; 0 until set.
  void set_reply_bound(std::size_t bytes) { reply_bound_ = bytes; }
  std::size_t reserved_bytes() const;
  // Told each change of the bytes held by batches not answered yet (LegacySession).
  void set_batch_held(std::function<void(std::ptrdiff_t)> held) { legacy_.set_batch_held(std::move(held)); }
  // What its batches hold (LegacySession::batch_bytes).
  std::size_t batch_bytes() const { return legacy_.batch_bytes(); }
  // The client's replies not read yet (LegacySession::set_client_bytes).
  void set_client_bytes(std::function<std::size_t()> unread) { legacy_.set_client_bytes(std::move(unread)); }
  // Runs `hook` each time a call ends, before its response is handed to the sink.
  void set_on_call_ended(std::function<void()> hook);

  // Runs `callback` once no call is in flight: now, or right after the last one is answered.
  // (End of input: the requests already read are finished before the server stops.)
  void when_idle(std::function<void()> callback);

  // Shutdown, step 1: refuse new requests and ask every running call to stop; their results
  // (with the output so far) are still sent when they arrive.
  void stop_accepting_and_cancel();
  // Shutdown, step 2: answer every call still without a result with an error.
  void abandon_in_flight(const std::string& reason);

 private:
  void send(const nlohmann::json& message);
  // Calls may outlive the session (an engine callback after shutdown): their outlets hold the
  // sink weakly.
  Outlet outlet();

  std::shared_ptr<Sink> sink_;
  CallTable calls_;
  LegacySession legacy_;
  StatelessHandler stateless_;
  std::size_t reply_bound_ = 0;
};

}  // namespace mcp
