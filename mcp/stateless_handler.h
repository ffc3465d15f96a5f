// Requests of the stateless era (MCP 2026-07-28): no handshake and no session; each request
// carries its protocol version and client capabilities in _meta and is served on its own.
// server/discover, tools/list (one page, deterministic order, caching hints) and tools/call;
// every other method is -32601 (initialize, ping and logging/setLevel no longer exist).
// Every result carries resultType and the server's identity in _meta; notifications/message
// only for a request that asked for a level (io.modelcontextprotocol/logLevel). Single-threaded.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "mcp/call_table.h"
#include "mcp/era.h"
#include "mcp/tool_registry.h"

namespace mcp {

// How long a client may reuse server/discover and tools/list results (caching hints): the tool
// list of a running server never changes, but a replaced deployment may bring other limits.
inline constexpr int kListTtlMs = 300000;

class StatelessHandler {
 public:
  StatelessHandler(const ToolRegistry& tools, std::string instructions, std::string logger_name);

  // Serves one request: reads and checks its _meta, then dispatches. `key` names the call in
  // `calls` (tools/call). Refusals and results leave through `outlet`.
  void handle(const nlohmann::json& id, const std::string& method, const nlohmann::json& params,
              CallTable& calls, std::string key, const CallOptions& base, const Outlet& outlet) const;

  // Dispatches a request whose _meta was read (`meta`) and whose version was checked.
  void dispatch(const nlohmann::json& id, const std::string& method, const nlohmann::json& params,
                const RequestMeta& meta, CallTable& calls, std::string key, const CallOptions& base,
                const Outlet& outlet) const;

  // From now on requests are refused (shutdown).
  void stop_accepting() { accepting_ = false; }

 private:
  nlohmann::json discover_result() const;

  const ToolRegistry& tools_;
  std::string instructions_;
  std::string logger_name_;
  bool accepting_ = true;
};

}  // namespace mcp
