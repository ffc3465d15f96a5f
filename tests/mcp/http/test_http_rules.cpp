// The HTTP transport's rules without sockets: Origin/Host/token, Accept, routing between the
// eras, mirrored headers and error statuses.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "mcp/http/rules.h"

using nlohmann::json;
namespace http = mcp::http;

namespace {

const std::optional<std::string> none;

std::optional<std::string> opt(const char* value) { return std::string(value); }

http::HeaderLookup headers(std::map<std::string, std::string> values) {
  return [values](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return http::trim_ows(it->second);
  };
}

json meta_params(json params = json::object()) {
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  return params;
}

}  // namespace

TEST_CASE("http rules: loopback hosts and origins") {
  for (const char* host : {"localhost", "LOCALHOST:8000", "127.0.0.1", "127.0.0.1:1", "127.9.9.9:80",
                           "[::1]", "[::1]:8000", " localhost "}) {
    INFO(host);
    CHECK(http::host_is_loopback(host));
  }
  for (const char* host : {"evil.example.com", "evil.example.com:8000", "localhost.evil.com",
                           "10.0.0.1", "[::2]:80", "127.0.0.1:80x", "", "[::1"}) {
    INFO(host);
    CHECK_FALSE(http::host_is_loopback(host));
  }
  for (const char* origin : {"http://localhost:6274", "https://127.0.0.1", "http://[::1]:3000"}) {
    INFO(origin);
    CHECK(http::origin_is_loopback(origin));
  }
  for (const char* origin : {"http://evil.example.com", "null", "file://", "http://localhost:80/x",
                             "ftp://localhost", "http://127.0.0.1.evil.com"}) {
    INFO(origin);
    CHECK_FALSE(http::origin_is_loopback(origin));
  }
}

TEST_CASE("http rules: access on a loopback listener refuses foreign Origin and Host (DNS rebinding)") {
  const http::AccessPolicy policy{true, std::nullopt};
  CHECK(http::check_access(policy, opt("127.0.0.1:8000"), none, none) == http::Access::allowed);
  CHECK(http::check_access(policy, opt("localhost:8000"), opt("http://localhost:8000"), none) ==
        http::Access::allowed);
  CHECK(http::check_access(policy, opt("127.0.0.1:8000"), opt("http://evil.example.com"), none) ==
        http::Access::foreign_origin);
  CHECK(http::check_access(policy, opt("evil.example.com:8000"), none, none) == http::Access::foreign_host);
  CHECK(http::check_access(policy, none, none, none) == http::Access::foreign_host);
}

TEST_CASE("http rules: beyond loopback, any Host, no browser origin, and the token") {
  const http::AccessPolicy policy{false, std::string("s3cret-token-0123456789")};
  CHECK(http::check_access(policy, opt("mcp.example.com"), none, opt("Bearer s3cret-token-0123456789")) ==
        http::Access::allowed);
  CHECK(http::check_access(policy, opt("mcp.example.com"), none, opt("bearer   s3cret-token-0123456789 ")) ==
        http::Access::allowed);
  CHECK(http::check_access(policy, opt("mcp.example.com"), none, none) == http::Access::no_token);
  CHECK(http::check_access(policy, opt("mcp.example.com"), none, opt("Bearer s3cret-token-012345678")) ==
        http::Access::wrong_token);
  CHECK(http::check_access(policy, opt("mcp.example.com"), none, opt("Basic czNjcmV0")) ==
        http::Access::wrong_token);
  CHECK(http::check_access(policy, opt("mcp.example.com"), opt("https://mcp.example.com"),
                           opt("Bearer s3cret-token-0123456789")) == http::Access::foreign_origin);
  // /healthz is not behind the token.
  CHECK(http::check_access(policy, opt("10.0.0.5:8000"), none, none, false) == http::Access::allowed);
  CHECK(http::www_authenticate(http::Access::no_token) == "Bearer realm=\"mcp-python-exec-sandbox\"");
  CHECK(http::www_authenticate(http::Access::wrong_token).find("error=\"invalid_token\"") != std::string::npos);
}

TEST_CASE("http rules: token comparison") {
  CHECK(http::token_matches("abc", "abc"));
  CHECK_FALSE(http::token_matches("abc", "abd"));
  CHECK_FALSE(http::token_matches("abc", "abcd"));
  CHECK_FALSE(http::token_matches("", "abc"));
}

TEST_CASE("http rules: Accept") {
  auto both = http::parse_accept(none);
  CHECK((both.json && both.event_stream));
  both = http::parse_accept(opt("application/json, text/event-stream"));
  CHECK((both.json && both.event_stream));
  const auto json_only = http::parse_accept(opt("application/json"));
  CHECK((json_only.json && !json_only.event_stream));
  const auto sse_only = http::parse_accept(opt("text/event-stream;q=1, application/json;q=0"));
  CHECK((!sse_only.json && sse_only.event_stream));
  const auto wildcard = http::parse_accept(opt("*/*"));
  CHECK((wildcard.json && wildcard.event_stream));
  const auto neither = http::parse_accept(opt("text/html"));
  CHECK((!neither.json && !neither.event_stream));
}

TEST_CASE("http rules: routing a POST between the eras") {
  const json discover = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}};
  const json modern_call = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", meta_params()}};
  const json initialize = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-11-25"}}}};
  const json legacy_list = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}};
  CHECK(http::route_post(discover, false, none) == http::Route::stateless);
  CHECK(http::route_post(modern_call, false, none) == http::Route::stateless);
  CHECK(http::route_post(modern_call, true, opt("2025-11-25")) == http::Route::stateless);
  CHECK(http::route_post(initialize, false, none) == http::Route::initialize);
  CHECK(http::route_post(initialize, true, none) == http::Route::session);
  // initialize with the stateless _meta is a stateless request (where it does not exist: 404).
  json modern_initialize = initialize;
  modern_initialize["params"] = meta_params();
  CHECK(http::route_post(modern_initialize, false, none) == http::Route::stateless);
  CHECK(http::route_post(legacy_list, true, opt("2025-11-25")) == http::Route::session);
  CHECK(http::route_post(legacy_list, false, none) == http::Route::no_session);
  // The 2026-07-28 header without _meta: a stateless request missing its _meta (-32602).
  CHECK(http::route_post(legacy_list, false, opt("2026-07-28")) == http::Route::stateless);
  CHECK(http::route_post(json::array({legacy_list}), true, none) == http::Route::session);
  CHECK(http::route_post(json::array({legacy_list}), false, none) == http::Route::no_session);
}

TEST_CASE("http rules: Base64 header values") {
  CHECK(http::decode_header_value("plain") == "plain");
  CHECK(http::decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界");
  CHECK(http::decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded ");
  CHECK(http::decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=") == "=?base64?literal?=");
  CHECK_FALSE(http::decode_header_value("=?base64?SGVsbG8?=").has_value());  // bad length
  CHECK_FALSE(http::decode_header_value("=?base64?SGV*bG8h?=").has_value());  // bad character
}

TEST_CASE("http rules: mirrored headers of the stateless era") {
  const json call = meta_params({{"name", "execute_python"}});
  auto good = std::map<std::string, std::string>{{"mcp-protocol-version", "2026-07-28"},
                                                 {"mcp-method", "tools/call"},
                                                 {"mcp-name", "  execute_python "}};
  CHECK_FALSE(http::check_mirrored_headers(headers(good), "tools/call", call, "2026-07-28"));
  auto encoded = good;
  encoded["mcp-name"] = "=?base64?ZXhlY3V0ZV9weXRob24=?=";
  CHECK_FALSE(http::check_mirrored_headers(headers(encoded), "tools/call", call, "2026-07-28"));

  auto expect_mismatch = [&](std::map<std::string, std::string> values, const std::string& body_version,
                             const std::string& needle) {
    const auto refusal = http::check_mirrored_headers(headers(values), "tools/call", call, body_version);
    REQUIRE(refusal);
    CHECK(refusal->code == -32020);
    CHECK(refusal->message.find(needle) != std::string::npos);
  };
  CHECK(http::check_mirrored_headers(headers(good), "tools/call", call, "v999")->code == -32020);
  auto values = good;
  values.erase("mcp-protocol-version");
  expect_mismatch(values, "2026-07-28", "MCP-Protocol-Version");
  values = good;
  values.erase("mcp-method");
  expect_mismatch(values, "2026-07-28", "Mcp-Method");
  values = good;
  values["mcp-method"] = "TOOLS/CALL";  // values are case-sensitive
  expect_mismatch(values, "2026-07-28", "Mcp-Method");
  values = good;
  values.erase("mcp-name");
  expect_mismatch(values, "2026-07-28", "Mcp-Name");
  values = good;
  values["mcp-name"] = "wrong_tool";
  expect_mismatch(values, "2026-07-28", "wrong_tool");
  values = good;
  values["mcp-name"] = "=?base64?!!!!?=";
  expect_mismatch(values, "2026-07-28", "Base64");
  // tools/list has no name: Mcp-Name is not expected.
  const auto list_headers = headers({{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/list"}});
  CHECK_FALSE(http::check_mirrored_headers(list_headers, "tools/list", meta_params(), "2026-07-28"));
}

TEST_CASE("http rules: statuses of stateless errors") {
  CHECK(http::stateless_error_status(-32601) == 404);
  for (int code : {-32700, -32600, -32602, -32020, -32021, -32022}) CHECK(http::stateless_error_status(code) == 400);
  CHECK(http::stateless_error_status(-32603) == 500);
}
