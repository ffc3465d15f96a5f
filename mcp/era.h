// The two eras of MCP this server speaks, and the per-request metadata of the stateless one.
//
// Initialize era (2024-11-05 .. 2025-11-25): an `initialize` handshake opens a session (the stdio
// process, or an HTTP session), which fixes the protocol version and the client's capabilities.
// Stateless era (2026-07-28): no handshake; every request carries its protocol version and client
// capabilities in `params._meta` (io.modelcontextprotocol/*) and is served on its own.
// A request carrying that metadata is served statelessly; `initialize` selects the other era.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/log_level.h"

namespace mcp {

inline constexpr std::string_view kStatelessProtocolVersion = "2026-07-28";

// Initialize-era versions, newest first; the first is answered when a client asks for a version
// we do not speak.
inline constexpr std::array<std::string_view, 4> kSupportedProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// Every version this server speaks, newest first: what server/discover and
// UnsupportedProtocolVersionError list. The initialize-era ones are served through initialize.
inline constexpr std::array<std::string_view, 5> kAllProtocolVersions = {
    "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

namespace meta_key {
inline constexpr std::string_view kProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kServerInfo = "io.modelcontextprotocol/serverInfo";
}  // namespace meta_key

// The initialize-era version answered for `requested`: itself when supported, else the newest.
std::string_view negotiate_protocol_version(std::string_view requested);
bool is_initialize_era_version(std::string_view version);

// True when a request belongs to the stateless era: its params carry the per-request protocol
// version or client capabilities, or the method exists only in that era (server/discover).
bool is_stateless_request(std::string_view method, const nlohmann::json& params);

// The per-request metadata of a stateless-era request.
struct RequestMeta {
  std::string protocol_version;
  std::optional<LogLevel> log_level;       // notifications/message only when set
  std::optional<nlohmann::json> progress_token;
};

// A request refused before any work: a JSON-RPC error (code, message, optional data).
struct Refusal {
  int code = 0;
  std::string message;
  std::optional<nlohmann::json> data;
};

// Reads params._meta: the required fields (-32602 when missing or malformed), the log level
// (-32602 when unknown) and the progress token. The version is checked separately
// (check_protocol_version), so that a transport can compare its own copies of the fields first.
std::optional<Refusal> read_request_meta(const nlohmann::json& params, RequestMeta& meta);
// -32022 UnsupportedProtocolVersion (data: supported, requested) unless `version` is 2026-07-28.
std::optional<Refusal> check_protocol_version(const std::string& version);

// {name, title, version}: serverInfo in initialize results and in stateless results' _meta.
nlohmann::json server_implementation();

// Adds what every stateless-era result carries: resultType "complete" and the server's identity
// in _meta (keeping any other _meta members).
void mark_stateless_result(nlohmann::json& result);

}  // namespace mcp
