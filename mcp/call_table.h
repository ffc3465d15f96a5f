// tools/call as both eras run it: argument checks, the call in flight (progress, logging,
// cancellation, the one response), and the table of calls in flight of one id scope (a stdio
// connection, an HTTP session, or the stateless requests of an HTTP server).
// Single-threaded: every method runs on the io thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mcp/log_level.h"
#include "mcp/tool_registry.h"

namespace mcp {

// Where one request's messages go: notifications related to it, then its response.
struct Outlet {
  std::function<void(nlohmann::json notification)> notify;  // empty: notifications are dropped
  // Called exactly once: the response, or nullopt when none is to be sent (cancelled).
  std::function<void(std::optional<nlohmann::json> response)> done;
};

struct CallOptions {
  std::optional<nlohmann::json> progress_token;  // _meta.progressToken
  bool progress_message = true;                  // "message" in progress (2025-03-26 on)
  std::function<bool(LogLevel)> wants_log;       // empty: no notifications/message
  std::string logger_name = "mcp-python-exec-sandbox";
  bool stateless = false;                        // stateless era: resultType + serverInfo
  std::string client;  // who asked (an HTTP client's address): runs of clients take turns
  // Whose sessions the call may see (ToolCall::owner): "" on stdio (one client), the protocol
  // session over HTTP's initialize era, the server's token holders in the stateless era.
  std::string owner;
  // The call's share of the stdio intake bound (mcp/intake.h), held while it is in flight.
  std::size_t reserve_bytes = 0;
};

class CallTable {
 public:
  CallTable();
  ~CallTable();
  CallTable(const CallTable&) = delete;
  CallTable& operator=(const CallTable&) = delete;

  // Checks the params of tools/call and starts the tool. `key` identifies the call in this table
  // (the serialized request id on a connection); a key in flight is refused (-32600).
  // Every outcome, refusals included, leaves through `outlet`.
  void call_tool(const ToolRegistry& tools, const nlohmann::json& id, std::string key,
                 const nlohmann::json& params, CallOptions options, Outlet outlet);

  // The client no longer wants an answer (notifications/cancelled, a closed HTTP stream): the
  // response is suppressed and the work is asked to stop. False when `key` is not in flight.
  bool cancel(const std::string& key);
  bool contains(const std::string& key) const;
  std::size_t size() const;
  // The shares (CallOptions::reserve_bytes) of the calls in flight, together.
  std::size_t reserved_bytes() const;
  // Runs `hook` each time a call leaves the table (answered, suppressed or abandoned).
  void set_on_call_ended(std::function<void()> hook);
  // Runs `callback` once no call is in flight: now, or right after the last one's response went
  // out (or was suppressed).
  void when_empty(std::function<void()> callback);

  // The client is gone (an HTTP session ended): every call is cancelled and nothing is sent.
  void drop_all();

  // Shutdown, step 1: ask every call to stop; results (with the output so far) still go out.
  void cancel_all();
  // Shutdown, step 2: answer every call still without a result with an internal error.
  void abandon_all(const std::string& reason);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mcp
