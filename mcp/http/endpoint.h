// The MCP endpoint of the Streamable HTTP transport (/mcp, plus /healthz): access checks
// (Origin, Host, bearer token), then both eras on the one endpoint: a POST carrying the
// 2026-07-28 per-request _meta is served statelessly (mirrored headers checked, HTTP statuses
// from the error codes, 202 for notifications, an event stream for a running call that ends the
// call when it closes); initialize and Mcp-Session-Id traffic go to the initialize-era sessions.
// Calls carry the client's address, so that the engine's scheduler lets clients take turns.
// Single-threaded (io thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/event_loop.h"
#include "mcp/http/exchange.h"
#include "mcp/http/output_budget.h"
#include "mcp/http/rules.h"
#include "mcp/http/sessions.h"
#include "mcp/tool_registry.h"

namespace mcp::http {

inline constexpr std::string_view kEndpointPath = "/mcp";
inline constexpr std::string_view kHealthPath = "/healthz";

struct EndpointOptions {
  AccessPolicy access;
  std::string instructions;
  std::string logger_name = "mcp-python-exec-sandbox";
  SessionLimits sessions;
  OwnerEndedFn owner_ended;  // an initialize-era session ended: what its owner holds goes
  // Unsent bytes per client and the refusal of new calls over them (null: none).
  std::shared_ptr<OutputBudget> budget;
};

class Endpoint {
 public:
  Endpoint(asio::io_context& io, const ToolRegistry& tools, EndpointOptions options);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  void handle(Request request, std::shared_ptr<Response> response);
  // The client closed a connection: stateless calls it carried are cancelled (their runs
  // killed); initialize-era streams wait for a resumption.
  void connection_closed(std::uint64_t connection);

  std::size_t calls_in_flight() const;
  std::size_t sessions() const;
  // Shutdown, step 1: new requests get 503; running calls are asked to stop, their results still
  // go out. Step 2: calls still without a result are answered with an error.
  void stop_accepting_and_cancel();
  void abandon_in_flight(const std::string& reason);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mcp::http
