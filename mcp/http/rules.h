// The rules of the Streamable HTTP transport that need no socket: who may talk to the endpoint
// (Origin and Host against DNS rebinding, the bearer token), which era a POST belongs to, the
// stateless era's mirrored headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) and the HTTP
// status each JSON-RPC error gets.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/era.h"

namespace mcp::http {

// A request header by name (case-insensitive), without surrounding whitespace; nullopt if absent.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;

std::string trim_ows(std::string_view value);

struct AccessPolicy {
  bool loopback = true;                  // listening on loopback: Host must name loopback too
  std::optional<std::string> token;      // every /mcp request carries it as a bearer token
};

enum class Access { allowed, foreign_origin, foreign_host, no_token, wrong_token };

// Origin first (a browser page from elsewhere: 403), then Host (DNS rebinding onto a loopback
// listener: 403), then the token (401). `check_token` is false for /healthz.
Access check_access(const AccessPolicy& policy, const std::optional<std::string>& host,
                    const std::optional<std::string>& origin,
                    const std::optional<std::string>& authorization, bool check_token = true);

// "localhost", "127.0.0.1", "[::1]" (any case, optional port).
bool host_is_loopback(std::string_view host);
// "http(s)://<loopback host>[:port]".
bool origin_is_loopback(std::string_view origin);
// Constant-time in the token's content and length (compares SHA-256 digests).
bool token_matches(std::string_view presented, std::string_view expected);
// The WWW-Authenticate value of a 401.
std::string www_authenticate(Access refusal);

// What the client's Accept header allows (absent or */* allows both).
struct Accepts {
  bool json = false;
  bool event_stream = false;
};
Accepts parse_accept(const std::optional<std::string>& accept);

enum class Route {
  stateless,   // the 2026-07-28 era: served on its own
  initialize,  // opens an initialize-era session
  session,     // belongs to the session named by Mcp-Session-Id
  no_session,  // initialize-era traffic without a session: 400
};
// `message` is one JSON-RPC message object or a batch array.
Route route_post(const nlohmann::json& message, bool has_session_id,
                 const std::optional<std::string>& protocol_version_header);

// A header value in the Base64 sentinel form "=?base64?...?=" decoded; plain values as they are;
// nullopt when the Base64 is invalid.
std::optional<std::string> decode_header_value(std::string_view value);

// The stateless era's header checks (-32020 HeaderMismatch): MCP-Protocol-Version must equal the
// body's _meta version, Mcp-Method the method, Mcp-Name the tool name (tools/call, prompts/get)
// or URI (resources/read) when the body has one.
std::optional<Refusal> check_mirrored_headers(const HeaderLookup& header, const std::string& method,
                                              const nlohmann::json& params,
                                              const std::string& body_version);

// The HTTP status of a stateless-era JSON-RPC error response.
int stateless_error_status(int code);

}  // namespace mcp::http
