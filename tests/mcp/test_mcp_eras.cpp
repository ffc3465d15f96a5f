// Both eras on one line stream: requests carrying the 2026-07-28 per-request _meta are served
// statelessly, everything else by the initialize-era session; one table of calls for both.
#include <catch2/catch.hpp>

#include <string>

#include "mcp/era.h"
#include "mcp/server_info.h"
#include "tests/support/session_harness.h"

using nlohmann::json;
using test_support::error_code;
using test_support::Harness;

namespace {

json modern_meta(const std::string& version = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "1"}}}};
}

json with_meta(json params, json meta = modern_meta()) {
  params["_meta"] = std::move(meta);
  return params;
}

std::string message_of(const json& response) { return response["error"]["message"].get<std::string>(); }

void check_stateless_result(const json& result) {
  CHECK(result["resultType"] == "complete");
  const auto& info = result["_meta"]["io.modelcontextprotocol/serverInfo"];
  CHECK(info["name"] == "mcp-python-exec-sandbox");
  CHECK(info["version"] == std::string(mcp::server_version()));
}

}  // namespace

TEST_CASE("eras: server/discover answers without initialize, with versions, capabilities and caching hints") {
  Harness h;
  h.request("d", "server/discover", with_meta(json::object()));
  const auto response = h.take();
  CHECK(response["id"] == "d");
  const auto& result = response["result"];
  check_stateless_result(result);
  json versions = json::array();
  for (auto v : mcp::kAllProtocolVersions) versions.push_back(v);
  CHECK(result["supportedVersions"] == versions);
  CHECK(result["supportedVersions"][0] == "2026-07-28");
  CHECK(result["capabilities"]["tools"].is_object());
  CHECK(result["instructions"] == "Use the tools.");
  CHECK(result["ttlMs"].is_number_integer());
  CHECK(result["ttlMs"].get<int>() >= 0);
  CHECK(result["cacheScope"] == "public");
  CHECK_FALSE(result.contains("serverInfo"));
  CHECK_FALSE(h.session->initialized());  // discovery opens no session
  CHECK(h.initialized_callbacks == 0);
}

TEST_CASE("eras: a stateless request missing a required _meta field is -32602, naming the field") {
  Harness h;
  h.request(1, "server/discover");
  auto response = h.take();
  CHECK(error_code(response) == -32602);
  CHECK(response["id"] == 1);
  auto meta = modern_meta();
  meta.erase("io.modelcontextprotocol/protocolVersion");
  h.request(2, "tools/list", with_meta(json::object(), meta));
  response = h.take();
  CHECK(error_code(response) == -32602);
  CHECK(message_of(response).find("io.modelcontextprotocol/protocolVersion") != std::string::npos);
  meta = modern_meta();
  meta.erase("io.modelcontextprotocol/clientCapabilities");
  h.request(3, "tools/list", with_meta(json::object(), meta));
  response = h.take();
  CHECK(error_code(response) == -32602);
  CHECK(message_of(response).find("io.modelcontextprotocol/clientCapabilities") != std::string::npos);
  // clientInfo is optional.
  meta = modern_meta();
  meta.erase("io.modelcontextprotocol/clientInfo");
  h.request(4, "server/discover", with_meta(json::object(), meta));
  CHECK(h.take()["result"]["resultType"] == "complete");
  meta = modern_meta();
  meta["io.modelcontextprotocol/logLevel"] = "loud";
  h.request(5, "tools/list", with_meta(json::object(), meta));
  CHECK(error_code(h.take()) == -32602);
}

TEST_CASE("eras: an unsupported version is -32022 listing every supported version") {
  Harness h;
  h.request(7, "server/discover", with_meta(json::object(), modern_meta("v999.0.0")));
  auto response = h.take();
  CHECK(response["id"] == 7);
  CHECK(error_code(response) == -32022);
  const auto& data = response["error"]["data"];
  CHECK(data["requested"] == "v999.0.0");
  REQUIRE(data["supported"].size() == mcp::kAllProtocolVersions.size());
  CHECK(data["supported"][0] == "2026-07-28");
  // An initialize-era version in _meta: served only through initialize, and the error says so.
  h.request(8, "tools/list", with_meta(json::object(), modern_meta("2025-11-25")));
  response = h.take();
  CHECK(error_code(response) == -32022);
  CHECK(message_of(response).find("initialize") != std::string::npos);
}

TEST_CASE("eras: methods of the initialize era do not exist statelessly") {
  Harness h;
  int id = 0;
  for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe", "nope/nope"}) {
    h.request(++id, method, with_meta({{"protocolVersion", "2025-11-25"}, {"level", "debug"}}));
    const auto response = h.take();
    CHECK(response["id"] == id);
    CHECK(error_code(response) == -32601);
  }
  CHECK_FALSE(h.session->initialized());  // a stateless initialize selects nothing
}

TEST_CASE("eras: stateless tools/list and tools/call carry resultType and serverInfo; legacy ones do not") {
  Harness h;
  h.request(1, "tools/list", with_meta(json::object()));
  const auto stateless_list = h.take()["result"];
  check_stateless_result(stateless_list);
  CHECK(stateless_list["cacheScope"] == "public");
  CHECK(stateless_list["ttlMs"] == mcp::kListTtlMs);
  CHECK_FALSE(stateless_list.contains("nextCursor"));
  REQUIRE(stateless_list["tools"].size() == 3);
  CHECK(stateless_list["tools"][0]["inputSchema"]["$schema"] ==
        "https://json-schema.org/draft/2020-12/schema");

  h.request(2, "tools/call", with_meta({{"name", "echo"}, {"arguments", {{"a", 1}}}}));
  const auto call = h.take()["result"];
  check_stateless_result(call);
  CHECK(call["content"][0]["text"] == R"({"a":1})");
  h.request(3, "tools/call", with_meta({{"name", "nope"}}));
  CHECK(error_code(h.take()) == -32602);

  h.initialize();
  h.request(4, "tools/list");
  const auto legacy_list = h.take()["result"];
  CHECK_FALSE(legacy_list.contains("resultType"));
  CHECK_FALSE(legacy_list.contains("ttlMs"));
  // The same tools in the same order, with the same 2020-12 schemas, in both eras.
  CHECK(legacy_list["tools"] == stateless_list["tools"]);
  h.request(5, "tools/call", {{"name", "echo"}});
  CHECK_FALSE(h.take()["result"].contains("resultType"));
  // Stateless requests still work next to the session.
  h.request(6, "tools/call", with_meta({{"name", "echo"}}));
  check_stateless_result(h.take()["result"]);
}

TEST_CASE("eras: notifications/message only for a stateless request that asked for a level") {
  Harness h;
  h.request(1, "tools/call", with_meta({{"name", "slow"}}));
  auto meta = modern_meta();
  meta["io.modelcontextprotocol/logLevel"] = "info";
  meta["progressToken"] = "p";
  h.request(2, "tools/call", with_meta({{"name", "slow"}}, meta));
  REQUIRE(h.pending.calls.size() == 2);
  h.pending.calls[0]->log(mcp::LogLevel::emergency, "not asked for");
  CHECK(h.out.empty());
  h.pending.calls[1]->log(mcp::LogLevel::debug, "below the level");
  CHECK(h.out.empty());
  h.pending.calls[1]->log(mcp::LogLevel::warning, "shown");
  const auto message = h.take();
  CHECK(message["method"] == "notifications/message");
  CHECK(message["params"]["data"] == "shown");
  h.pending.calls[1]->progress(1, 2, "half");
  const auto progress = h.take();
  CHECK(progress["params"]["progressToken"] == "p");
  CHECK(progress["params"]["message"] == "half");
  // Server-wide log records never reach a client that never initialized.
  h.session->log(mcp::LogLevel::emergency, "server log");
  CHECK(h.out.empty());
}

TEST_CASE("eras: notifications/cancelled stops a stateless call on the line stream") {
  Harness h;
  h.request("x", "tools/call", with_meta({{"name", "slow"}}));
  REQUIRE(h.pending.calls.size() == 1);
  CHECK(h.session->calls_in_flight() == 1);
  h.notify("notifications/cancelled", {{"requestId", "x"}});
  CHECK(h.pending.calls[0]->cancelled());
  h.pending.calls[0]->finish({{"content", json::array()}});
  CHECK(h.out.empty());
  CHECK(h.session->calls_in_flight() == 0);
}

TEST_CASE("eras: shutdown refuses stateless requests and stops their calls") {
  Harness h;
  h.request(1, "tools/call", with_meta({{"name", "slow"}}));
  h.session->stop_accepting_and_cancel();
  CHECK(h.pending.cancel_hooks_run == 1);
  h.request(2, "tools/list", with_meta(json::object()));
  CHECK(error_code(h.take()) == -32603);
  h.request(3, "server/discover", with_meta(json::object()));
  CHECK(h.take()["result"]["resultType"] == "complete");  // discovery needs no run
  h.session->abandon_in_flight("bye");
  const auto abandoned = h.take();
  CHECK(abandoned["id"] == 1);
  CHECK(abandoned["error"]["message"] == "bye");
}
