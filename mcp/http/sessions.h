// The initialize era over HTTP (protocol versions 2025-03-26 .. 2025-11-25): a session per
// initialize, named by an unguessable Mcp-Session-Id; its requests answered as JSON or on
// resumable event streams (Last-Event-ID on GET replays what a broken connection missed); DELETE
// ends it; the standalone GET stream is not offered (405: the server sends nothing unrelated to
// a request). Idle sessions expire; their number is bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/event_loop.h"
#include "mcp/call_table.h"
#include "mcp/http/exchange.h"
#include "mcp/http/output_budget.h"
#include "mcp/http/rules.h"
#include "mcp/http/streams.h"
#include "mcp/legacy_session.h"
#include "mcp/tool_registry.h"

namespace mcp::http {

struct SessionLimits {
  std::size_t max_sessions = 1024;
  std::chrono::seconds idle{3600};                  // no request and nothing running
  std::chrono::seconds replay_kept{300};            // a finished stream stays resumable this long
  // Per session, what streams already delivered keep for replay (the oldest go first). A stream
  // whose answer no connection took yet is kept (until replay_kept after it ended): it counts
  // against the session's unsent bytes instead (output_budget.h).
  std::size_t replay_bytes = std::size_t{16} << 20;
};

// Told when a protocol session ends (DELETE, idle expiry, or room made for a new one), with the
// owner its calls carried (CallOptions::owner) and why: what it owns in the engine goes with it.
using OwnerEndedFn = std::function<void(const std::string& owner, const std::string& why)>;

// Where the endpoint keeps track of what a connection carries, so a closed connection detaches
// its streams.
using StreamClosedFn = std::function<void(std::uint64_t connection, std::weak_ptr<ResumableStream>,
                                          const Response* response)>;

class Sessions {
 public:
  // `budget` (may be null): a session's unsent bytes, and the refusal of its new calls over them.
  Sessions(asio::io_context& io, const ToolRegistry& tools, SessionOptions options,
           SessionLimits limits, OwnerEndedFn owner_ended = nullptr,
           std::shared_ptr<OutputBudget> budget = nullptr);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // POST initialize (no session yet).
  void initialize(const Request& request, const nlohmann::json& message, Accepts accepts,
                  std::shared_ptr<Response> response);
  // POST within a session: a message object or a batch.
  void post(const Request& request, const nlohmann::json& message, Accepts accepts,
            std::shared_ptr<Response> response);
  void get(const Request& request, std::shared_ptr<Response> response);
  void remove(const Request& request, std::shared_ptr<Response> response);  // DELETE

  // A connection closed: streams it carried wait for a resumption (runs go on).
  void connection_closed(std::uint64_t connection);

  std::size_t count() const;
  std::size_t calls_in_flight() const;
  void stop_accepting_and_cancel();
  void abandon_in_flight(const std::string& reason);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// 32 random bytes (OpenSSL), hex: visible ASCII, unguessable.
std::string new_session_id();
// The owner the calls of protocol session `session_id` carry (CallOptions::owner).
std::string owner_of_session(const std::string& session_id);

}  // namespace mcp::http
