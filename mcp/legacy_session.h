// One session of the initialize era (2024-11-05 .. 2025-11-25): the stdio process after
// `initialize`, or one Mcp-Session-Id on HTTP. Lifecycle and version negotiation, ping,
// logging/setLevel, tools/list, tools/call on the session's call table, and JSON-RPC batches
// (2025-03-26 only). Every incoming message is answered through the Outlet it came with, so the
// same session serves a line stream and per-request HTTP responses. Single-threaded.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mcp/call_table.h"
#include "mcp/log_level.h"
#include "mcp/tool_registry.h"

namespace mcp {

struct SessionOptions {
  std::string instructions;                  // initialize result "instructions"
  LogLevel log_level = LogLevel::warning;     // until the client sends logging/setLevel
  std::string logger_name = "mcp-python-exec-sandbox";
  // A batch's tools/call requests start while its held replies and its running calls fit in
  // `batch_max_bytes`, each call counted at `batch_reply_bound` (mcp/intake.h next_batch_call);
  // 0: no bound.
  std::size_t batch_max_bytes = 0;
  std::size_t batch_reply_bound = 0;
};

class LegacySession {
 public:
  // `calls` must outlive the session's calls (its owner keeps both).
  LegacySession(const ToolRegistry& tools, SessionOptions options, CallTable& calls);
  ~LegacySession();
  LegacySession(const LegacySession&) = delete;
  LegacySession& operator=(const LegacySession&) = delete;

  // One message object. `outlet.done` is called once: the response, or nullopt (notifications,
  // client responses, cancelled requests). Calls start from `base` (fair queue and client).
  void handle(const nlohmann::json& message, const Outlet& outlet, const CallOptions& base = {});
  // A JSON-RPC batch: `outlet.done` gets the array of its responses, serialized (nullopt when
  // there is none). Refused (-32600) unless 2025-03-26 was negotiated.
  struct BatchOutlet {
    std::function<void(nlohmann::json notification)> notify;
    std::function<void(std::optional<std::string> serialized)> done;
  };
  void handle_batch(const nlohmann::json& batch, const BatchOutlet& outlet, const CallOptions& base = {});

  // Told each change of the bytes this session's batches hold (a reply in: +, a batch sent: -),
  // so that its owner counts them as replies waiting for the client.
  void set_batch_held(std::function<void(std::ptrdiff_t)> held);
  // The replies its batches hold until their last call ends (serialized bytes).
  std::size_t batch_bytes() const;
  // The bytes of the client's replies not read yet, what its batches hold included: a batch's
  // calls start only within batch_max_bytes of it. Unset: what the batches hold.
  void set_client_bytes(std::function<std::size_t()> unread);

  // Called once, right after the initialize response has been handed to its outlet.
  void set_on_initialized(std::function<void()> callback);
  // Where log records unrelated to any request go (the stdio stream); empty: nowhere.
  void set_unrelated_sink(std::function<void(nlohmann::json)> sink);
  // A server log record: notifications/message through the unrelated sink when initialized and
  // `level` passes logging/setLevel.
  void log(LogLevel level, nlohmann::json data);
  bool wants_log(LogLevel level) const;

  bool initialized() const;
  const std::string& protocol_version() const;  // "" before initialize
  // New requests are refused from now on (shutdown).
  void stop_accepting();
  // The session ends (HTTP DELETE, expiry): new requests are refused, and batch calls not
  // started are dropped (not run, not answered).
  void end();

  struct State;
  struct Batch;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mcp
