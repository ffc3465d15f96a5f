// The MCP session: lifecycle, errors, batches, concurrency, cancellation, progress, logging.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "mcp/server_info.h"
#include "mcp/legacy_session.h"
#include "mcp/session.h"
#include "tests/support/session_harness.h"

using nlohmann::json;

using test_support::Harness;
using test_support::error_code;

TEST_CASE("initialize echoes a supported version and answers the newest otherwise") {
  for (auto version : mcp::kSupportedProtocolVersions) {
    Harness h;
    const auto response = h.initialize(std::string(version));
    CHECK(response["result"]["protocolVersion"] == version);
  }
  Harness h;
  const auto response = h.initialize("1999-01-01");
  CHECK(response["id"] == 0);
  const auto& result = response["result"];
  CHECK(result["protocolVersion"] == "2025-11-25");
  CHECK(result["serverInfo"]["name"] == "mcp-python-exec-sandbox");
  CHECK(result["serverInfo"]["version"] == std::string(mcp::server_version()));
  CHECK(result["serverInfo"]["title"].is_string());
  CHECK(result["capabilities"]["tools"].is_object());
  CHECK(result["capabilities"]["logging"].is_object());
  CHECK(result["instructions"] == "Use the tools.");
  CHECK(h.out.empty());  // notifications/initialized gets no reply
}

TEST_CASE("warm-up is triggered only after the initialize response went out") {
  Harness h;
  h.request(1, "ping");
  CHECK(h.take()["id"] == 1);
  CHECK(h.initialized_callbacks == 0);
  h.request(0, "initialize", {{"protocolVersion", "2025-06-18"}});
  CHECK(h.initialized_callbacks == 1);
  CHECK(h.messages_when_initialized == 1);  // the initialize answer was already out
  CHECK(h.take()["id"] == 0);
  h.request(2, "initialize", {{"protocolVersion", "2025-06-18"}});
  CHECK(error_code(h.take()) == -32600);
  CHECK(h.initialized_callbacks == 1);
}

TEST_CASE("before initialize only ping is served to requests without the per-request _meta") {
  Harness h;
  h.request(1, "ping");
  CHECK(h.take() == json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}});
  h.request(2, "tools/list");
  auto response = h.take();
  CHECK(response["id"] == 2);
  CHECK(error_code(response) == -32600);
  CHECK(response["error"]["message"].get<std::string>().find("initialize") != std::string::npos);
  h.initialize();
  h.request(5, "ping");
  CHECK(h.take()["result"] == json::object());
}

TEST_CASE("error codes: parse error without id, invalid request, unknown method, bad params") {
  Harness h;
  h.initialize();
  h.line("{\"jsonrpc\":\"2.0\",\"id\":1,");
  auto response = h.take();
  CHECK(error_code(response) == -32700);
  CHECK_FALSE(response.contains("id"));

  h.line(R"({"jsonrpc":"2.0","id":2})");
  response = h.take();
  CHECK(error_code(response) == -32600);
  CHECK(response["id"] == 2);

  h.line(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  response = h.take();
  CHECK(error_code(response) == -32600);
  CHECK_FALSE(response.contains("id"));

  h.line("42");
  CHECK(error_code(h.take()) == -32600);

  h.request(3, "resources/list");
  response = h.take();
  CHECK(error_code(response) == -32601);
  CHECK(response["id"] == 3);

  h.send({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/list"}, {"params", json::array()}});
  CHECK(error_code(h.take()) == -32602);
  h.request(5, "tools/call", {{"arguments", json::object()}});
  CHECK(error_code(h.take()) == -32602);
  h.request(6, "tools/call", {{"name", "nope"}});
  response = h.take();
  CHECK(error_code(response) == -32602);
  CHECK(response["error"]["message"].get<std::string>().find("nope") != std::string::npos);
  h.request(7, "tools/call", {{"name", "echo"}, {"arguments", "x"}});
  CHECK(error_code(h.take()) == -32602);
  h.request(8, "tools/list", {{"cursor", "page2"}});
  CHECK(error_code(h.take()) == -32602);
  h.request(9, "logging/setLevel", {{"level", "loud"}});
  CHECK(error_code(h.take()) == -32602);
  h.request(10, "initialize", json::array());
  CHECK(error_code(h.take()) == -32600);  // already initialized
}

TEST_CASE("initialize without a protocolVersion is a params error") {
  Harness h;
  h.request(1, "initialize", {{"capabilities", json::object()}});
  CHECK(error_code(h.take()) == -32602);
  CHECK_FALSE(h.session->initialized());
}

TEST_CASE("responses and unknown notifications from the client get no reply") {
  Harness h;
  h.initialize();
  h.line(R"({"jsonrpc":"2.0","id":99,"result":{}})");
  h.notify("notifications/roots/list_changed");
  h.notify("notifications/cancelled", {{"requestId", 12345}});
  CHECK(h.out.empty());
}

TEST_CASE("tools/list and tools/call") {
  Harness h;
  h.initialize();
  h.request(1, "tools/list");
  const auto tools = h.take()["result"]["tools"];
  REQUIRE(tools.size() == 3);
  CHECK(tools[0]["name"] == "echo");
  CHECK(tools[0]["inputSchema"]["properties"].is_object());
  h.request("c", "tools/call", {{"name", "echo"}, {"arguments", {{"x", 1}}}});
  const auto response = h.take();
  CHECK(response["id"] == "c");
  CHECK(response["result"]["content"][0]["text"] == R"({"x":1})");
  h.request(2, "tools/call", {{"name", "broken"}});
  const auto broken = h.take();
  CHECK(broken["result"]["isError"] == true);
  CHECK(broken["result"]["content"][0]["text"].get<std::string>().find("boom") != std::string::npos);
}

TEST_CASE("a running call delays nothing else, and results go out when ready") {
  Harness h;
  h.initialize();
  h.request(1, "tools/call", {{"name", "slow"}});
  h.request(2, "tools/call", {{"name", "slow"}});
  h.request(3, "ping");
  h.request(4, "tools/list");
  h.request(5, "tools/call", {{"name", "echo"}});
  REQUIRE(h.out.size() == 3);
  CHECK(h.take()["id"] == 3);
  CHECK(h.take()["id"] == 4);
  CHECK(h.take()["id"] == 5);
  CHECK(h.session->calls_in_flight() == 2);
  REQUIRE(h.pending.calls.size() == 2);
  h.pending.calls[1]->finish({{"content", json::array()}});
  CHECK(h.take()["id"] == 2);
  h.pending.calls[0]->finish({{"content", json::array()}});
  h.pending.calls[0]->finish({{"content", json::array()}});  // only the first counts
  CHECK(h.take()["id"] == 1);
  CHECK(h.out.empty());
  CHECK(h.session->calls_in_flight() == 0);
}

TEST_CASE("an id already in flight is refused") {
  Harness h;
  h.initialize();
  h.request(1, "tools/call", {{"name", "slow"}});
  h.request(1, "tools/call", {{"name", "slow"}});
  CHECK(error_code(h.take()) == -32600);
  CHECK(h.pending.calls.size() == 1);
}

TEST_CASE("notifications/cancelled stops the work and suppresses the response") {
  Harness h;
  h.initialize();
  h.request("a", "tools/call", {{"name", "slow"}});
  h.request(7, "tools/call", {{"name", "slow"}});
  REQUIRE(h.pending.calls.size() == 2);
  h.notify("notifications/cancelled", {{"requestId", "a"}, {"reason", "user"}});
  CHECK(h.pending.cancel_hooks_run == 1);
  CHECK(h.pending.calls[0]->cancelled());
  CHECK_FALSE(h.pending.calls[1]->cancelled());
  h.pending.calls[0]->finish({{"content", json::array()}});
  CHECK(h.out.empty());
  // A hook registered after the cancellation runs at once.
  bool late_hook = false;
  h.pending.calls[0]->on_cancel([&] { late_hook = true; });
  CHECK(late_hook);
  h.pending.calls[1]->finish({{"content", json::array()}});
  CHECK(h.take()["id"] == 7);
}

TEST_CASE("an id that is not a string or a 64-bit integer is an invalid request") {
  Harness h;
  h.initialize();
  // Parsed as doubles: answered, they came back as 1.2345678901234568e+29, not the id sent.
  for (const char* id : {"123456789012345678901234567890", "-9223372036854775809", "18446744073709551616"}) {
    h.line(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}");
    const auto response = h.take();
    INFO(id);
    CHECK(error_code(response) == -32600);
    CHECK_FALSE(response.contains("id"));
    CHECK(response["error"]["message"].get<std::string>().find("outside the 64-bit range") != std::string::npos);
  }
  h.line(R"({"jsonrpc":"2.0","method":"ping","id":40.5})");
  CHECK(error_code(h.take()) == -32600);
  h.line(R"({"jsonrpc":"2.0","method":"ping","id":40.0})");
  CHECK(error_code(h.take()) == -32600);
  h.line(R"({"jsonrpc":"2.0","method":"ping","id":18446744073709551615})");
  const auto biggest = h.take();
  CHECK(biggest["id"].is_number_unsigned());
  CHECK(biggest["id"].dump() == "18446744073709551615");
  CHECK(biggest["result"] == json::object());
}

TEST_CASE("cancellation names its request by the same rule: 40.0 is not the request 40") {
  Harness h;
  h.initialize();
  h.request(40, "tools/call", {{"name", "slow"}});
  REQUIRE(h.pending.calls.size() == 1);
  h.line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":40.0}})");
  CHECK_FALSE(h.pending.calls[0]->cancelled());
  h.line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":40}})");
  CHECK(h.pending.calls[0]->cancelled());
  CHECK(h.out.empty());
}

TEST_CASE("a progress token that is not a string or a 64-bit integer is ignored") {
  Harness h;
  h.initialize("2025-06-18");
  h.line(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":1.5}}})");
  h.line(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":18446744073709551616}}})");
  h.line(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":-9223372036854775808}}})");
  REQUIRE(h.pending.calls.size() == 3);
  h.pending.calls[0]->progress(1, std::nullopt, "");
  h.pending.calls[1]->progress(1, std::nullopt, "");
  h.pending.calls[2]->progress(1, std::nullopt, "");
  REQUIRE(h.out.size() == 1);
  const auto progress = h.take();
  CHECK(progress["params"]["progressToken"].is_number_integer());
  CHECK(progress["params"]["progressToken"].dump() == "-9223372036854775808");
}

TEST_CASE("progress echoes the token's JSON type and only ever increases") {
  Harness h;
  h.initialize("2025-06-18");
  h.request(1, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", "tok"}}}});
  h.request(2, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", 17}}}});
  h.request(3, "tools/call", {{"name", "slow"}});
  REQUIRE(h.pending.calls.size() == 3);
  h.pending.calls[0]->progress(1, 10, "installing numpy");
  h.pending.calls[0]->progress(1, 10, "same value: dropped");
  h.pending.calls[0]->progress(0.5, 10, "smaller: dropped");
  h.pending.calls[0]->progress(2, std::nullopt, "");
  h.pending.calls[1]->progress(5, std::nullopt, "");
  h.pending.calls[2]->progress(1, std::nullopt, "no token: nothing");
  REQUIRE(h.out.size() == 3);
  auto first = h.take();
  CHECK(first["method"] == "notifications/progress");
  CHECK(first["params"]["progressToken"] == "tok");
  CHECK(first["params"]["progress"] == 1.0);
  CHECK(first["params"]["total"] == 10.0);
  CHECK(first["params"]["message"] == "installing numpy");
  auto second = h.take();
  CHECK(second["params"]["progress"] == 2.0);
  CHECK_FALSE(second["params"].contains("total"));
  CHECK_FALSE(second["params"].contains("message"));
  auto third = h.take();
  CHECK(third["params"]["progressToken"].is_number_integer());
  CHECK(third["params"]["progressToken"] == 17);
  // After the result, no more progress for that request.
  h.pending.calls[0]->finish({{"content", json::array()}});
  h.take();
  h.pending.calls[0]->progress(99, std::nullopt, "");
  CHECK(h.out.empty());
}

TEST_CASE("progress messages are left out for 2024-11-05 clients") {
  Harness h;
  h.initialize("2024-11-05");
  h.request(1, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", 1}}}});
  h.pending.calls[0]->progress(1, std::nullopt, "hello");
  const auto note = h.take();
  CHECK(note["params"]["progress"] == 1.0);
  CHECK_FALSE(note["params"].contains("message"));
}

TEST_CASE("logging/setLevel controls notifications/message") {
  Harness h;
  h.session->log(mcp::LogLevel::error, "before initialize");
  CHECK(h.out.empty());
  h.initialize();
  h.session->log(mcp::LogLevel::info, "below the default");
  CHECK(h.out.empty());
  h.session->log(mcp::LogLevel::warning, "shown");
  auto message = h.take();
  CHECK(message["method"] == "notifications/message");
  CHECK(message["params"]["level"] == "warning");
  CHECK(message["params"]["data"] == "shown");
  CHECK(message["params"]["logger"].is_string());
  h.request(1, "logging/setLevel", {{"level", "debug"}});
  CHECK(h.take()["result"] == json::object());
  h.session->log(mcp::LogLevel::debug, "now shown");
  CHECK(h.take()["params"]["level"] == "debug");
  h.request(2, "logging/setLevel", {{"level", "critical"}});
  h.take();
  h.session->log(mcp::LogLevel::error, "hidden again");
  CHECK(h.out.empty());
}

TEST_CASE("batches are refused unless 2025-03-26 was negotiated") {
  Harness h;
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  auto response = h.take();
  CHECK(error_code(response) == -32600);
  CHECK_FALSE(response.contains("id"));
  h.initialize("2025-06-18");
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  response = h.take();
  CHECK(error_code(response) == -32600);
  CHECK_FALSE(response.contains("id"));
}

TEST_CASE("batches on 2025-03-26: one array of responses, notifications left out") {
  Harness h;
  h.initialize("2025-03-26");
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
         R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
         R"({"jsonrpc":"2.0","id":2,"method":"nope"},)"
         R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}])");
  const auto batch = h.take();
  REQUIRE(batch.is_array());
  REQUIRE(batch.size() == 3);
  CHECK(batch[0]["id"] == 1);
  CHECK(error_code(batch[1]) == -32601);
  CHECK(batch[2]["result"]["content"].is_array());

  h.line("[]");
  CHECK(error_code(h.take()) == -32600);
  h.line(R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])");
  CHECK(h.out.empty());
}

TEST_CASE("a batch waits for its slow calls and skips cancelled ones") {
  Harness h;
  h.initialize("2025-03-26");
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","id":3,"method":"ping"}])");
  CHECK(h.out.empty());
  REQUIRE(h.pending.calls.size() == 2);
  h.notify("notifications/cancelled", {{"requestId", 1}});
  CHECK(h.out.empty());
  h.pending.calls[1]->finish({{"content", json::array()}});
  const auto batch = h.take();
  REQUIRE(batch.size() == 2);
  CHECK(batch[0]["id"] == 3);
  CHECK(batch[1]["id"] == 2);
}

// Batches within 1000 bytes, each call counted at 400.
mcp::SessionOptions bounded_batches() {
  mcp::SessionOptions options{"Use the tools."};
  options.batch_max_bytes = 1000;
  options.batch_reply_bound = 400;
  return options;
}

TEST_CASE("a batch's calls start within its byte bound; past it they are refused, not held") {
  Harness h(bounded_batches());
  std::ptrdiff_t held = 0;
  std::vector<std::ptrdiff_t> changes;
  h.session->set_batch_held([&](std::ptrdiff_t bytes) {
    held += bytes;
    changes.push_back(bytes);
  });
  h.initialize("2025-03-26");
  json batch = json::array();
  for (int id = 1; id <= 5; ++id) {
    batch.push_back({{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
  }
  batch.push_back({{"jsonrpc", "2.0"}, {"id", 6}, {"method", "ping"}});
  h.send(batch);
  // Two calls fit (2 x 400 <= 1000); the others wait; the ping is answered into the batch.
  REQUIRE(h.pending.calls.size() == 2);
  CHECK(h.out.empty());
  CHECK(held > 0);
  // A queued call cancelled before it starts gets no response, like any cancelled request.
  h.notify("notifications/cancelled", {{"requestId", 5}});
  // A 500-byte reply held: with one call running, 500 + 2 x 400 > 1000, so nothing starts.
  const std::string big(500, 'x');
  h.pending.calls[0]->finish({{"content", json::array({{{"type", "text"}, {"text", big}}})}});
  CHECK(h.pending.calls.size() == 2);
  // Nothing runs now: 500+ held + 400 > 1000, so call 3 waits no longer: it and 4 are refused.
  h.pending.calls[1]->finish({{"content", json::array()}});
  CHECK(h.pending.calls.size() == 2);
  const auto reply = h.take();
  REQUIRE(reply.is_array());
  REQUIRE(reply.size() == 5);  // 1, 2, 3 and 4 refused, the ping; 5 cancelled
  std::vector<int> refused;
  for (const auto& response : reply) {
    if (response.contains("error")) {
      CHECK(error_code(response) == -32000);
      CHECK(response["error"]["message"].get<std::string>().find("another message") != std::string::npos);
      refused.push_back(response["id"].get<int>());
    }
  }
  CHECK(refused == std::vector<int>{3, 4});
  // Every byte the batch held is given back once it is answered.
  CHECK(held == 0);
  CHECK(changes.back() < 0);
}

TEST_CASE("batches share one bound: the client's unread replies and every batch's running calls") {
  Harness h(bounded_batches());
  std::size_t unread_elsewhere = 0;  // the client's replies outside batches (a transport's queue)
  std::ptrdiff_t held = 0;
  h.session->set_batch_held([&](std::ptrdiff_t bytes) { held += bytes; });
  h.session->set_client_bytes([&] { return unread_elsewhere + static_cast<std::size_t>(held); });
  h.initialize("2025-03-26");
  const auto slow_batch = [&](int first) {
    json batch = json::array();
    for (int id = first; id < first + 2; ++id) {
      batch.push_back({{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
    }
    h.send(batch);
  };
  slow_batch(1);
  REQUIRE(h.pending.calls.size() == 2);
  // A second batch: the first's two running calls already take the room of two replies.
  slow_batch(11);
  CHECK(h.pending.calls.size() == 2);
  h.pending.calls[0]->finish({{"content", json::array()}});
  REQUIRE(h.pending.calls.size() == 3);  // a slot freed: the second batch's first call starts
  h.pending.calls[1]->finish({{"content", json::array()}});
  const auto first = h.take();  // the first batch is answered once both its calls are in
  REQUIRE(first.size() == 2);
  REQUIRE(h.pending.calls.size() == 4);
  h.pending.calls[2]->finish({{"content", json::array()}});
  h.pending.calls[3]->finish({{"content", json::array()}});
  CHECK(h.take().size() == 2);
  CHECK(held == 0);
  // Replies the client has not read elsewhere count too: with 700 bytes unread, a batch's
  // call is refused at once (nothing of it runs to make room).
  unread_elsewhere = 700;
  slow_batch(21);
  CHECK(h.pending.calls.size() == 4);
  const auto refused = h.take();
  REQUIRE(refused.size() == 2);
  for (const auto& r : refused) CHECK(error_code(r) == -32000);
}

TEST_CASE("a batch of a session that ends: calls not started are dropped, the batch answered with the rest") {
  const auto options = bounded_batches();
  mcp::ToolRegistry registry;
  std::vector<std::shared_ptr<mcp::ToolCall>> calls;
  mcp::ToolDefinition slow;
  slow.name = "slow";
  slow.description = "stays open";
  slow.input_schema = {{"type", "object"}, {"properties", json::object()}};
  slow.handler = [&](std::shared_ptr<mcp::ToolCall> call) { calls.push_back(call); };
  registry.add(slow);
  mcp::CallTable table;
  mcp::LegacySession legacy(registry, options, table);
  std::vector<json> out;
  mcp::Outlet outlet{nullptr, [&](std::optional<json> r) { if (r) out.push_back(*r); }};
  legacy.handle(json::parse(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})"),
                outlet);
  out.clear();
  std::vector<std::optional<std::string>> answers;
  json batch = json::array();
  for (int id = 1; id <= 5; ++id) {
    batch.push_back({{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
  }
  legacy.handle_batch(batch, mcp::LegacySession::BatchOutlet{nullptr, [&](std::optional<std::string> a) {
                                                                answers.push_back(std::move(a));
                                                              }});
  REQUIRE(calls.size() == 2);
  legacy.end();  // (an HTTP DELETE)
  calls[0]->finish({{"content", json::array()}});
  CHECK(calls.size() == 2);  // nothing else started
  CHECK(answers.empty());
  calls[1]->finish({{"content", json::array()}});
  REQUIRE(answers.size() == 1);
  REQUIRE(answers[0].has_value());
  const auto reply = json::parse(*answers[0]);
  REQUIRE(reply.size() == 2);
  CHECK(reply[0]["id"] == 1);
  CHECK(reply[1]["id"] == 2);
}

TEST_CASE("a batch may cancel one of its own calls") {
  Harness h;
  h.initialize("2025-03-26");
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}},)"
         R"({"jsonrpc":"2.0","id":2,"method":"ping"}])");
  CHECK(h.pending.calls.empty());  // never started
  const auto reply = h.take();
  REQUIRE(reply.size() == 1);
  CHECK(reply[0]["id"] == 2);
}

TEST_CASE("a batch's calls wait for room and then start, all answered in one array") {
  Harness h(bounded_batches());
  h.initialize("2025-03-26");
  h.line(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}},)"
         R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}])");
  REQUIRE(h.pending.calls.size() == 2);
  h.pending.calls[0]->finish({{"content", json::array()}});  // small: 3 starts, then 4 waits
  REQUIRE(h.pending.calls.size() == 3);
  h.pending.calls[1]->finish({{"content", json::array()}});  // 4 (echo) starts and ends at once
  h.pending.calls[2]->finish({{"content", json::array()}});
  const auto reply = h.take();
  REQUIRE(reply.size() == 4);
  for (const auto& response : reply) CHECK(response.contains("result"));
}

TEST_CASE("an over-long line is answered with the id it carried") {
  Harness h;
  h.initialize();
  h.session->handle_oversize({20000000, mcp::kMaxLineBytes, json(12)});
  auto response = h.take();
  CHECK(response["id"] == 12);
  CHECK(error_code(response) == -32600);
  CHECK(response["error"]["message"].get<std::string>().find("20000000") != std::string::npos);
  h.session->handle_oversize({20000000, mcp::kMaxLineBytes, std::nullopt});
  CHECK_FALSE(h.take().contains("id"));
}

TEST_CASE("shutdown: running calls are asked to stop, still answered, then abandoned") {
  Harness h;
  h.initialize();
  h.request(1, "tools/call", {{"name", "slow"}});
  h.request(2, "tools/call", {{"name", "slow"}});
  h.session->stop_accepting_and_cancel();
  CHECK(h.pending.cancel_hooks_run == 2);
  h.request(3, "tools/list");
  auto refused = h.take();
  CHECK(refused["id"] == 3);
  CHECK(error_code(refused) == -32603);
  h.request(4, "ping");
  CHECK(h.take()["result"] == json::object());
  // A cancelled run still reports the output it had.
  h.pending.calls[0]->finish({{"content", json::array({{{"type", "text"}, {"text", "partial"}}})}});
  CHECK(h.take()["result"]["content"][0]["text"] == "partial");
  h.session->abandon_in_flight("going away");
  auto abandoned = h.take();
  CHECK(abandoned["id"] == 2);
  CHECK(abandoned["error"]["message"] == "going away");
  CHECK(h.session->calls_in_flight() == 0);
  h.pending.calls[1]->finish({{"content", json::array()}});
  CHECK(h.out.empty());
}

TEST_CASE("a call outliving its session is harmless") {
  std::shared_ptr<mcp::ToolCall> survivor;
  {
    Harness h;
    h.initialize();
    h.request(1, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", 1}}}});
    survivor = h.pending.calls.at(0);
    h.pending.calls.clear();
  }
  survivor->progress(1, std::nullopt, "");
  survivor->log(mcp::LogLevel::error, "x");
  survivor->finish({{"content", json::array()}});
  CHECK_FALSE(survivor->cancelled());
}

TEST_CASE("when_idle runs once the last call in flight is answered (or suppressed), after its response") {
  Harness h;
  h.initialize();
  int idle = 0;
  h.session->when_idle([&] { ++idle; });
  CHECK(idle == 1);  // nothing in flight: at once

  h.request(1, "tools/call", {{"name", "slow"}});
  h.request(2, "tools/call", {{"name", "slow"}});
  std::size_t responses_when_idle = 0;
  h.session->when_idle([&] {
    ++idle;
    responses_when_idle = h.out.size();
  });
  REQUIRE(h.pending.calls.size() == 2);
  h.pending.calls[0]->finish({{"content", json::array()}});
  CHECK(idle == 1);
  h.notify("notifications/cancelled", {{"requestId", 2}});  // suppressed: no response
  CHECK(idle == 2);
  CHECK(responses_when_idle == 1);  // the answered call's response went out first
  CHECK(h.take()["id"] == 1);
  h.pending.calls[1]->finish({{"content", json::array()}});
  CHECK(idle == 2);  // once only
}
