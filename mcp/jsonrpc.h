// JSON-RPC 2.0 message building, parsing and classification, as MCP uses it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mcp::jsonrpc {

using json = nlohmann::json;

enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  // Implementation-defined server error: the request was refused for now (send it again later).
  kServerBusy = -32000,
  // Defined by MCP 2026-07-28 (the range -32020..-32099 is reserved to the specification).
  kHeaderMismatch = -32020,
  kMissingRequiredClientCapability = -32021,
  kUnsupportedProtocolVersion = -32022,
};

// Deepest nesting accepted in an incoming message; deeper input is a parse error, so that no
// recursive walk over client data can exhaust the stack.
inline constexpr int kMaxNesting = 128;

// Parses one line. nullopt = not JSON (or nested deeper than kMaxNesting).
std::optional<json> parse(std::string_view text);

// A request id (or progress token) as MCP allows it: a string or an integer, never null. A
// number with a fraction or an exponent (40.5, 40.0, 4e1) is not one, nor an integer outside
// the 64 bits nlohmann keeps exactly (it parses 18446744073709551616 as a double, which would
// be echoed as 1.8446744073709552e+19): such an id could not be answered or cancelled as sent.
bool is_valid_id(const json& id);
// Why `id` is not a valid id, in words for an error message; empty when it is valid.
std::string id_problem(const json& id);

// Error response; with no id the "id" member is left out entirely (clients reject "id": null).
json error_response(const std::optional<json>& id, int code, std::string message,
                    const std::optional<json>& data = std::nullopt);
json result_response(const json& id, json result);
json notification(std::string_view method, json params);

// Compact, single-line serialisation; invalid UTF-8 in strings is replaced rather than thrown on.
std::string serialize(const json& message);

enum class Kind { request, notification, response, invalid };
struct Classified {
  Kind kind = Kind::invalid;
  std::optional<json> id;  // valid id when one is present (also for invalid messages)
  std::string method;
  std::string problem;     // why it is invalid
};
// Classifies one message object (not a batch array).
Classified classify(const json& message);

}  // namespace mcp::jsonrpc
