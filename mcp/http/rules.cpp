#include "mcp/http/rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "mcp/jsonrpc.h"
#include "mcp/server_info.h"

namespace mcp::http {

using json = nlohmann::json;
namespace rpc = jsonrpc;

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; });
}

// "name[:port]" or "[v6][:port]" -> the name (brackets removed); nullopt when malformed.
std::optional<std::string> host_part(std::string_view authority) {
  if (authority.empty()) return std::nullopt;
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const auto rest = authority.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) return std::nullopt;
    return std::string(authority.substr(1, close - 1));
  }
  const auto colon = authority.find(':');
  if (colon == std::string_view::npos) return std::string(authority);
  if (!all_digits(authority.substr(colon + 1))) return std::nullopt;
  return std::string(authority.substr(0, colon));
}

bool name_is_loopback(const std::string& name) {
  const std::string host = lower(name);
  if (host == "localhost") return true;
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::optional<std::string> bearer_token(const std::string& authorization) {
  const auto space = authorization.find(' ');
  if (space == std::string::npos || lower(authorization.substr(0, space)) != "bearer") {
    return std::nullopt;
  }
  return trim_ows(std::string_view(authorization).substr(space + 1));
}

Refusal mismatch(std::string message) {
  return {rpc::kHeaderMismatch, "Header mismatch: " + std::move(message), std::nullopt};
}

}  // namespace

std::string trim_ows(std::string_view value) {
  const auto first = value.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = value.find_last_not_of(" \t");
  return std::string(value.substr(first, last - first + 1));
}

bool host_is_loopback(std::string_view host) {
  const auto name = host_part(trim_ows(host));
  return name && name_is_loopback(*name);
}

bool origin_is_loopback(std::string_view origin) {
  const std::string value = lower(trim_ows(origin));
  std::string_view rest(value);
  for (std::string_view scheme : {"http://", "https://"}) {
    if (rest.substr(0, scheme.size()) == scheme) {
      rest.remove_prefix(scheme.size());
      if (rest.find('/') != std::string_view::npos) return false;
      const auto name = host_part(rest);
      return name && name_is_loopback(*name);
    }
  }
  return false;
}

bool token_matches(std::string_view presented, std::string_view expected) {
  unsigned char a[SHA256_DIGEST_LENGTH];
  unsigned char b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

Access check_access(const AccessPolicy& policy, const std::optional<std::string>& host,
                    const std::optional<std::string>& origin,
                    const std::optional<std::string>& authorization, bool check_token) {
  // Browsers send Origin; no page from another origin may drive a server that runs code. Only a
  // loopback listener accepts pages served from loopback.
  if (origin && !(policy.loopback && origin_is_loopback(*origin))) return Access::foreign_origin;
  if (policy.loopback && !(host && host_is_loopback(*host))) return Access::foreign_host;
  if (check_token && policy.token) {
    if (!authorization) return Access::no_token;
    const auto token = bearer_token(*authorization);
    if (!token || !token_matches(*token, *policy.token)) return Access::wrong_token;
  }
  return Access::allowed;
}

std::string www_authenticate(Access refusal) {
  std::string value = "Bearer realm=\"" + std::string(kServerName) + "\"";
  if (refusal == Access::wrong_token) value += ", error=\"invalid_token\"";
  return value;
}

Accepts parse_accept(const std::optional<std::string>& accept) {
  if (!accept || trim_ows(*accept).empty()) return {true, true};
  Accepts out;
  std::string_view rest(*accept);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string item = lower(trim_ows(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto semicolon = item.find(';');
    const std::string type = trim_ows(std::string_view(item).substr(0, semicolon));
    // q=0 means "not acceptable".
    if (semicolon != std::string::npos) {
      const std::string params = item.substr(semicolon);
      const auto q = params.find("q=");
      if (q != std::string::npos && std::strtod(params.c_str() + q + 2, nullptr) <= 0.0) continue;
    }
    if (type == "*/*") {
      out.json = out.event_stream = true;
    } else if (type == "application/*" || type == "application/json") {
      out.json = true;
    } else if (type == "text/*" || type == "text/event-stream") {
      out.event_stream = true;
    }
  }
  return out;
}

Route route_post(const json& message, bool has_session_id,
                 const std::optional<std::string>& protocol_version_header) {
  const auto msg = rpc::classify(message);
  if (msg.kind == rpc::Kind::request || msg.kind == rpc::Kind::notification) {
    const json params = message.value("params", json::object());
    if (is_stateless_request(msg.method, params)) return Route::stateless;
    if (protocol_version_header == kStatelessProtocolVersion && !has_session_id) {
      return Route::stateless;
    }
    if (msg.method == "initialize" && msg.kind == rpc::Kind::request && !has_session_id) {
      return Route::initialize;
    }
  }
  return has_session_id ? Route::session : Route::no_session;
}

std::optional<std::string> decode_header_value(std::string_view value) {
  constexpr std::string_view kPrefix = "=?base64?";
  constexpr std::string_view kSuffix = "?=";
  if (value.size() < kPrefix.size() + kSuffix.size() || value.substr(0, kPrefix.size()) != kPrefix ||
      value.substr(value.size() - kSuffix.size()) != kSuffix) {
    return std::string(value);
  }
  const auto encoded = value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size());
  if (encoded.size() % 4 != 0) return std::nullopt;
  std::string out(encoded.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(encoded.data()),
                                static_cast<int>(encoded.size()));
  if (n < 0) return std::nullopt;
  std::size_t padding = 0;
  for (auto it = encoded.rbegin(); it != encoded.rend() && *it == '=' && padding < 2; ++it) ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

std::optional<Refusal> check_mirrored_headers(const HeaderLookup& header, const std::string& method,
                                              const json& params, const std::string& body_version) {
  const auto version = header("mcp-protocol-version");
  if (!version) return mismatch("the MCP-Protocol-Version header is missing");
  if (*version != body_version) {
    return mismatch("MCP-Protocol-Version header '" + *version + "' does not match _meta " +
                    std::string(meta_key::kProtocolVersion) + " '" + body_version + "'");
  }
  const auto mcp_method = header("mcp-method");
  if (!mcp_method) return mismatch("the Mcp-Method header is missing");
  if (*mcp_method != method) {
    return mismatch("Mcp-Method header '" + *mcp_method + "' does not match the body's method '" +
                    method + "'");
  }
  std::optional<std::string> body_name;
  const char* field = method == "resources/read" ? "uri" : "name";
  if (method == "tools/call" || method == "prompts/get" || method == "resources/read") {
    if (const auto it = params.find(field); it != params.end() && it->is_string()) {
      body_name = it->get<std::string>();
    }
  }
  if (body_name) {
    const auto raw = header("mcp-name");
    if (!raw) return mismatch("the Mcp-Name header is missing (the body's " + std::string(field) + " is '" + *body_name + "')");
    const auto name = decode_header_value(*raw);
    if (!name) return mismatch("the Mcp-Name header is not valid Base64");
    if (*name != *body_name) {
      return mismatch("Mcp-Name header value '" + *name + "' does not match body value '" +
                      *body_name + "'");
    }
  }
  return std::nullopt;
}

int stateless_error_status(int code) {
  switch (code) {
    case rpc::kMethodNotFound: return 404;
    case rpc::kInternalError: return 500;
    case rpc::kParseError:
    case rpc::kInvalidRequest:
    case rpc::kInvalidParams:
    case rpc::kHeaderMismatch:
    case rpc::kMissingRequiredClientCapability:
    case rpc::kUnsupportedProtocolVersion: return 400;
    default: return 500;
  }
}

}  // namespace mcp::http
