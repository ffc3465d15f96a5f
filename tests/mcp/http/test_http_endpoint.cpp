// The MCP endpoint of the HTTP transport with recorded responses (no sockets): access, statuses,
// both eras, event streams, cancellation when a connection closes, sessions and resumption.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "mcp/http/endpoint.h"
#include "mcp/jsonrpc.h"

using nlohmann::json;
namespace http = mcp::http;

namespace {

struct Recorded final : http::Response {
  int status = 0;
  http::HeaderList headers;
  std::string body;
  bool started = false;
  bool ended = false;
  std::vector<std::string> writes;

  void send(int s, http::HeaderList h, std::string b) override {
    REQUIRE(status == 0);
    status = s;
    headers = std::move(h);
    body = std::move(b);
    ended = true;
  }
  void start(int s, http::HeaderList h) override {
    REQUIRE(status == 0);
    status = s;
    headers = std::move(h);
    started = true;
  }
  void write(std::string data) override {
    REQUIRE(started);
    REQUIRE_FALSE(ended);
    writes.push_back(std::move(data));
  }
  void end() override { ended = true; }

  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "";
  }
  json json_body() const { return json::parse(body); }
  // The JSON-RPC messages of the event stream (priming events and comments skipped).
  std::vector<json> events() const {
    std::vector<json> out;
    for (const auto& w : writes) {
      const auto data = w.find("data: ");
      if (data == std::string::npos || w.compare(data + 6, 1, "\n") == 0) continue;
      out.push_back(json::parse(w.substr(data + 6, w.find('\n', data) - data - 6)));
    }
    return out;
  }
};

json meta() {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

struct Fixture {
  asio::io_context io;
  mcp::ToolRegistry tools;
  std::vector<std::shared_ptr<mcp::ToolCall>> calls;
  int cancelled = 0;
  std::vector<std::string> owners;                         // what calls of "whoami" carried
  std::vector<std::pair<std::string, std::string>> ended;  // owner_ended: owner, why
  std::unique_ptr<http::Endpoint> endpoint;

  std::shared_ptr<http::OutputBudget> budget;

  explicit Fixture(http::AccessPolicy access = {}, http::SessionLimits limits = {},
                   std::shared_ptr<http::OutputBudget> output = nullptr)
      : budget(std::move(output)) {
    mcp::ToolDefinition echo;
    echo.name = "echo";
    echo.input_schema = {{"type", "object"}};
    echo.handler = [](std::shared_ptr<mcp::ToolCall> call) {
      call->finish({{"content", json::array({{{"type", "text"}, {"text", "hi"}}})}});
    };
    tools.add(echo);
    mcp::ToolDefinition slow;
    slow.name = "slow";
    slow.input_schema = {{"type", "object"}};
    slow.handler = [this](std::shared_ptr<mcp::ToolCall> call) {
      call->on_cancel([this] { ++cancelled; });
      calls.push_back(call);
    };
    tools.add(slow);
    mcp::ToolDefinition whoami;
    whoami.name = "whoami";
    whoami.input_schema = {{"type", "object"}};
    whoami.handler = [this](std::shared_ptr<mcp::ToolCall> call) {
      owners.push_back(call->owner());
      call->finish({{"content", json::array({{{"type", "text"}, {"text", call->owner()}}})}});
    };
    tools.add(whoami);
    http::EndpointOptions options;
    options.owner_ended = [this](const std::string& owner, const std::string& why) { ended.emplace_back(owner, why); };
    options.access = access;
    options.instructions = "test";
    options.sessions = limits;
    options.budget = budget;
    endpoint = std::make_unique<http::Endpoint>(io, tools, options);
  }

  std::shared_ptr<Recorded> request(const std::string& method, http::HeaderList headers,
                                    std::string body = "", std::uint64_t connection = 1,
                                    const std::string& path = "/mcp") {
    http::Request request;
    request.method = method;
    request.path = path;
    request.headers = std::move(headers);
    if (!request.header("host")) request.headers.emplace_back("host", "127.0.0.1:8000");
    request.body = std::move(body);
    request.connection = connection;
    request.peer = "127.0.0.1";
    auto response = std::make_shared<Recorded>();
    endpoint->handle(std::move(request), response);
    drain();
    return response;
  }
  void drain() {
    io.restart();
    io.poll();
  }

  // A stateless POST with conformant headers.
  std::shared_ptr<Recorded> stateless(const json& id, const std::string& method, json params,
                                      http::HeaderList extra = {}, std::uint64_t connection = 1) {
    params["_meta"] = meta();
    http::HeaderList headers = {{"content-type", "application/json"},
                                {"accept", "application/json, text/event-stream"},
                                {"mcp-protocol-version", "2026-07-28"},
                                {"mcp-method", method}};
    if (params.contains("name")) headers.emplace_back("mcp-name", params["name"].get<std::string>());
    for (auto& [name, value] : extra) {
      std::erase_if(headers, [&](const auto& h) { return h.first == name; });
      if (!value.empty()) headers.emplace_back(name, value);
    }
    json body = {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
    if (!id.is_null()) body["id"] = id;
    return request("POST", headers, body.dump(), connection);
  }

  std::shared_ptr<Recorded> legacy(const std::string& session, const json& body, std::uint64_t connection = 1) {
    http::HeaderList headers = {{"content-type", "application/json"},
                                {"accept", "application/json, text/event-stream"},
                                {"mcp-protocol-version", "2025-11-25"}};
    if (!session.empty()) headers.emplace_back("mcp-session-id", session);
    return request("POST", headers, body.dump(), connection);
  }

  std::shared_ptr<Recorded> try_initialize(const std::string& version = "2025-11-25") {
    return legacy("", {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                       {"params", {{"protocolVersion", version}, {"capabilities", json::object()},
                                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
  }
  std::string initialize(const std::string& version = "2025-11-25") {
    auto r = try_initialize(version);
    REQUIRE(r->status == 200);
    return r->header("Mcp-Session-Id");
  }
};

int error_code(const Recorded& r) { return r.json_body()["error"]["code"].get<int>(); }

}  // namespace

TEST_CASE("http endpoint: health, unknown paths and methods") {
  Fixture f;
  auto r = f.request("GET", {}, "", 1, "/healthz");
  CHECK(r->status == 200);
  CHECK(r->json_body()["status"] == "ok");
  CHECK(f.request("GET", {}, "", 1, "/other")->status == 404);
  r = f.request("PUT", {});
  CHECK(r->status == 405);
  CHECK(r->header("Allow") == "GET, POST, DELETE");
  // GET and DELETE without a session: the stateless era has neither.
  CHECK(f.request("GET", {{"accept", "text/event-stream"}})->status == 405);
  CHECK(f.request("DELETE", {})->status == 405);
}

TEST_CASE("http endpoint: foreign Origin and Host are refused with 403, a JSON-RPC error without id") {
  Fixture f;
  auto r = f.stateless(1, "server/discover", json::object(), {{"origin", "http://evil.example.com"}});
  CHECK(r->status == 403);
  CHECK(error_code(*r) == -32600);
  CHECK_FALSE(r->json_body().contains("id"));
  r = f.stateless(1, "server/discover", json::object(), {{"host", "evil.example.com:8000"}});
  CHECK(r->status == 403);
  CHECK(f.stateless(1, "server/discover", json::object(), {{"origin", "http://localhost:8000"}})->status == 200);
  // /healthz too checks Host on a loopback listener.
  CHECK(f.request("GET", {{"host", "evil.example.com"}}, "", 1, "/healthz")->status == 403);
}

TEST_CASE("http endpoint: the bearer token, 401 with WWW-Authenticate") {
  Fixture f(http::AccessPolicy{false, std::string("0123456789abcdef-token")});
  auto r = f.stateless(1, "server/discover", json::object());
  CHECK(r->status == 401);
  CHECK(r->header("WWW-Authenticate") == "Bearer realm=\"mcp-python-exec-sandbox\"");
  r = f.stateless(1, "server/discover", json::object(), {{"authorization", "Bearer wrong"}});
  CHECK(r->status == 401);
  CHECK(r->header("WWW-Authenticate").find("invalid_token") != std::string::npos);
  r = f.stateless(1, "server/discover", json::object(), {{"authorization", "Bearer 0123456789abcdef-token"}});
  CHECK(r->status == 200);
  CHECK(f.request("GET", {}, "", 1, "/healthz")->status == 200);  // no token needed
}

TEST_CASE("http endpoint: stateless statuses follow the error codes") {
  Fixture f;
  auto r = f.stateless(1, "server/discover", json::object());
  CHECK(r->status == 200);
  CHECK(r->header("Content-Type") == "application/json");
  CHECK(r->json_body()["result"]["resultType"] == "complete");

  r = f.request("POST", {{"content-type", "application/json"}, {"mcp-protocol-version", "2026-07-28"},
                         {"mcp-method", "server/discover"}},
                R"({"jsonrpc":"2.0","id":5,"method":"server/discover","params":{}})");
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32602);
  CHECK(r->json_body()["id"] == 5);

  r = f.stateless(2, "server/discover", json::object(), {{"mcp-protocol-version", "2025-11-25"}});
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32020);
  r = f.stateless(3, "tools/call", {{"name", "echo"}}, {{"mcp-name", "other"}});
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32020);
  CHECK(f.calls.empty());

  auto unsupported = meta();
  unsupported["io.modelcontextprotocol/protocolVersion"] = "v999";
  r = f.request("POST", {{"content-type", "application/json"}, {"mcp-protocol-version", "v999"},
                         {"mcp-method", "tools/list"}},
                json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/list"}, {"params", {{"_meta", unsupported}}}}.dump());
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32022);

  for (const char* method : {"ping", "initialize", "logging/setLevel", "nope"}) {
    r = f.stateless(6, method, json::object());
    CHECK(r->status == 404);
    CHECK(error_code(*r) == -32601);
  }
  r = f.stateless(json(), "notifications/cancelled", {{"requestId", 1}});
  CHECK(r->status == 202);
  CHECK(r->body.empty());
  r = f.stateless(7, "tools/call", {{"name", "nope"}});
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32602);
}

TEST_CASE("http endpoint: malformed POSTs") {
  Fixture f;
  auto r = f.request("POST", {{"content-type", "text/plain"}}, "{}");
  CHECK(r->status == 415);
  r = f.request("POST", {{"content-type", "application/json"}, {"accept", "text/html"}}, "{}");
  CHECK(r->status == 406);
  r = f.request("POST", {{"content-type", "application/json"}}, "{nope");
  CHECK(r->status == 400);
  CHECK(error_code(*r) == -32700);
  r = f.request("POST", {{"content-type", "application/json"}, {"mcp-protocol-version", "2026-07-28"}},
                R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"}])");
  CHECK(r->status == 400);
  r = f.request("POST", {{"content-type", "application/json"}},
                R"({"jsonrpc":"2.0","id":9,"method":"tools/list"})");
  CHECK(r->status == 400);  // neither a session nor the stateless _meta
  CHECK(r->json_body()["id"] == 9);
  CHECK(r->json_body()["error"]["message"].get<std::string>().find("initialize") != std::string::npos);
}

TEST_CASE("http endpoint: a running stateless call streams its progress and result") {
  Fixture f;
  json params = {{"name", "slow"}};
  auto r = f.stateless("c", "tools/call", params);
  REQUIRE(f.calls.size() == 1);
  CHECK(f.calls[0]->client() == "127.0.0.1");  // the engine lets clients take turns by this
  CHECK(r->started);
  CHECK(r->status == 200);
  CHECK(r->header("Content-Type") == "text/event-stream");
  CHECK(r->header("X-Accel-Buffering") == "no");
  f.calls[0]->progress(1, 2, "half");
  CHECK(r->events().empty());  // no progress token asked for
  f.calls[0]->finish({{"content", json::array()}});
  const auto events = r->events();
  REQUIRE(events.size() == 1);
  CHECK(events[0]["id"] == "c");
  CHECK(events[0]["result"]["resultType"] == "complete");
  CHECK(r->ended);
  // A client that takes JSON only waits for one JSON answer.
  auto json_only = f.stateless("d", "tools/call", params, {{"accept", "application/json"}});
  CHECK_FALSE(json_only->started);
  f.calls[1]->finish({{"content", json::array()}});
  CHECK(json_only->status == 200);
  CHECK(json_only->json_body()["id"] == "d");
}

TEST_CASE("http endpoint: closing the connection cancels the stateless calls it carried") {
  Fixture f;
  auto first = f.stateless(1, "tools/call", {{"name", "slow"}}, {}, 7);
  auto other = f.stateless(2, "tools/call", {{"name", "slow"}}, {}, 8);
  REQUIRE(f.calls.size() == 2);
  CHECK(f.endpoint->calls_in_flight() == 2);
  f.endpoint->connection_closed(7);
  CHECK(f.cancelled == 1);
  CHECK(f.calls[0]->cancelled());
  CHECK_FALSE(f.calls[1]->cancelled());
  f.calls[0]->finish({{"content", json::array()}});
  CHECK(first->events().empty());  // nothing more is sent for it
  CHECK(f.endpoint->calls_in_flight() == 1);
}

TEST_CASE("http endpoint: initialize-era sessions") {
  Fixture f;
  const auto session = f.initialize();
  CHECK(session.size() == 64);
  CHECK(session.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(f.initialize() != session);
  CHECK(f.endpoint->sessions() == 2);

  auto r = f.legacy(session, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  CHECK(r->status == 202);
  r = f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  CHECK(r->status == 200);
  CHECK(r->json_body()["result"]["tools"].size() == 3);
  CHECK_FALSE(r->json_body()["result"].contains("resultType"));
  r = f.legacy("0000", {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  CHECK(r->status == 404);
  r = f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}});
  CHECK(r->json_body()["result"] == json::object());

  // DELETE ends it: its calls are dropped, later requests get 404.
  f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
  REQUIRE(f.calls.size() == 1);
  r = f.request("DELETE", {{"mcp-session-id", session}});
  CHECK(r->status == 204);
  CHECK(f.calls[0]->cancelled());
  CHECK(f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}})->status == 404);
  CHECK(f.request("DELETE", {{"mcp-session-id", session}})->status == 404);
}

TEST_CASE("http endpoint: a session's stream survives its connection and is resumed with Last-Event-ID") {
  Fixture f;
  const auto session = f.initialize();
  auto r = f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                              {"params", {{"name", "slow"}, {"_meta", {{"progressToken", "t"}}}}}},
                    5);
  REQUIRE(f.calls.size() == 1);
  REQUIRE(r->started);
  REQUIRE_FALSE(r->writes.empty());
  CHECK(r->writes[0].rfind("id: ", 0) == 0);  // the priming event
  const std::string stream = r->writes[0].substr(4, r->writes[0].find('-') - 4);
  f.calls[0]->progress(1, std::nullopt, "");
  REQUIRE(r->events().size() == 1);
  // The connection breaks: in this era that is not a cancellation; the run goes on.
  f.endpoint->connection_closed(5);
  CHECK_FALSE(f.calls[0]->cancelled());
  f.calls[0]->progress(2, std::nullopt, "");
  f.calls[0]->finish({{"content", json::array()}});
  CHECK(r->events().size() == 1);
  // Resumption after the first event: the rest arrives, then the stream ends.
  auto resumed = f.request("GET", {{"mcp-session-id", session}, {"accept", "text/event-stream"},
                                   {"last-event-id", stream + "-1"}});
  CHECK(resumed->status == 200);
  const auto events = resumed->events();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["params"]["progress"] == 2.0);
  CHECK(events[1]["id"] == 1);
  CHECK(resumed->ended);
  // Unknown streams and a GET without Last-Event-ID.
  CHECK(f.request("GET", {{"mcp-session-id", session}, {"last-event-id", "999-1"}})->status == 400);
  CHECK(f.request("GET", {{"mcp-session-id", session}})->status == 405);
  CHECK(f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 9}, {"method", "ping"}}, 6)->status == 200);
}

TEST_CASE("http endpoint: an MCP-Protocol-Version a session does not speak is 400") {
  Fixture f;
  const auto session = f.initialize();
  auto r = f.request("POST", {{"content-type", "application/json"}, {"mcp-session-id", session},
                              {"mcp-protocol-version", "1999-01-01"}},
                     R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(r->status == 400);
}

TEST_CASE("http endpoint: shutdown refuses new requests with 503 and stops running calls") {
  Fixture f;
  f.stateless(1, "tools/call", {{"name", "slow"}});
  f.endpoint->stop_accepting_and_cancel();
  CHECK(f.cancelled == 1);
  CHECK(f.stateless(2, "server/discover", json::object())->status == 503);
  CHECK(f.request("GET", {}, "", 1, "/healthz")->status == 503);
  f.endpoint->abandon_in_flight("bye");
  CHECK(f.endpoint->calls_in_flight() == 0);
}

TEST_CASE("http endpoint: the number of sessions is bounded; the least recently used idle one goes") {
  http::SessionLimits limits;
  limits.max_sessions = 2;
  Fixture f({}, limits);
  const auto first = f.initialize();
  const auto second = f.initialize();
  // The second is busy with a run; the first is idle and least recently used.
  f.legacy(second, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
  const auto third = f.initialize();
  CHECK(f.endpoint->sessions() == 2);
  CHECK(f.legacy(first, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}})->status == 404);
  CHECK(f.legacy(second, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}})->status == 200);
  // Both left are busy: a new session is refused, not squeezed in.
  f.legacy(third, {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}});
  const auto refused = f.try_initialize();
  CHECK(refused->status == 503);
  CHECK(refused->header("Mcp-Session-Id").empty());
}

TEST_CASE("http endpoint: an initialize refused at the session bound ends no other session") {
  http::SessionLimits limits;
  limits.max_sessions = 2;
  Fixture f({}, limits);
  const auto first = f.initialize();
  const auto second = f.initialize();
  const auto bad = f.legacy("", {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                                 {"params", {{"capabilities", json::object()}}}});  // no protocolVersion
  CHECK(bad->status == 400);
  CHECK(bad->header("Mcp-Session-Id").empty());
  CHECK(f.endpoint->sessions() == 2);
  CHECK(f.ended.empty());
  CHECK(f.legacy(first, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}})->status == 200);
  CHECK(f.legacy(second, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}})->status == 200);
  // A good one still makes room: the least recently used idle session goes.
  const auto third = f.initialize();
  CHECK(f.endpoint->sessions() == 2);
  CHECK(f.legacy(first, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}})->status == 404);
  CHECK(f.legacy(third, {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "ping"}})->status == 200);
}

TEST_CASE("http endpoint: what a session's calls own is released when the session ends, and only then") {
  http::SessionLimits limits;
  limits.max_sessions = 2;
  Fixture f({}, limits);
  const auto whoami = [&f](const std::string& session, int id) {
    f.legacy(session, {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "whoami"}}}});
    REQUIRE_FALSE(f.owners.empty());
    return f.owners.back();
  };
  const auto first = f.initialize();
  const auto second = f.initialize();
  const auto first_owner = whoami(first, 1);
  const auto second_owner = whoami(second, 2);
  CHECK(first_owner != second_owner);
  CHECK(whoami(first, 3) == first_owner);
  CHECK(f.ended.empty());

  // DELETE: the owner its calls carried is released, once.
  CHECK(f.request("DELETE", {{"mcp-session-id", first}})->status == 204);
  REQUIRE(f.ended.size() == 1);
  CHECK(f.ended[0].first == first_owner);
  CHECK_THAT(f.ended[0].second, Catch::Contains("DELETE"));
  CHECK(f.request("DELETE", {{"mcp-session-id", first}})->status == 404);
  CHECK(f.ended.size() == 1);

  // Made room for a new one: the least recently used idle session's owner is released too.
  f.initialize();
  CHECK(f.ended.size() == 1);
  f.initialize();
  REQUIRE(f.ended.size() == 2);
  CHECK(f.ended[1].first == second_owner);
  CHECK_THAT(f.ended[1].second, Catch::Contains("make room"));
}

TEST_CASE("http endpoint: batches in a 2025-03-26 session, one JSON array back") {
  Fixture f;
  const auto session = f.initialize("2025-03-26");
  auto r = f.legacy(session, json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}},
                                          {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                                          {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                                           {"params", {{"name", "echo"}}}}}));
  CHECK(r->status == 200);
  const auto body = r->json_body();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == 2);
  CHECK(body[0]["id"] == 1);
  CHECK(body[1]["result"]["content"][0]["text"] == "hi");
  r = f.legacy(session, json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}}));
  CHECK(r->status == 202);
  // Not in a 2025-11-25 session.
  const auto newer = f.initialize();
  r = f.legacy(newer, json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}}));
  CHECK(r->json_body()["error"]["code"] == -32600);
}

TEST_CASE("http endpoint: a session whose answers no connection takes is refused new calls until it resumes") {
  auto budget = std::make_shared<http::OutputBudget>(http::OutputLimits{1000, 1 << 20});
  Fixture f({}, {}, budget);
  const auto session = f.initialize();
  const json call = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {{"name", "slow"}}}};
  auto r = f.legacy(session, call, 5);
  REQUIRE(f.calls.size() == 1);
  const std::string stream = r->writes[0].substr(4, r->writes[0].find('-') - 4);
  // The client hangs up without reading; the answer is kept for it, and charged to the session.
  f.endpoint->connection_closed(5);
  f.calls[0]->finish({{"content", json::array({{{"type", "text"}, {"text", std::string(2000, 'x')}}})}});
  const std::string client = http::OutputBudget::session_client(session);
  CHECK(budget->unsent(client) > 2000);
  // A new call is refused, with the limit named and when to retry; other requests still work.
  auto refused = f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                                    {"params", {{"name", "echo"}}}}, 6);
  CHECK(refused->status == 429);
  CHECK(refused->header("Retry-After") == "1");
  CHECK(refused->json_body()["id"] == 2);
  CHECK_THAT(refused->json_body()["error"]["message"].get<std::string>(),
             Catch::Contains("not read yet") && Catch::Contains("per client"));
  CHECK(f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}}, 6)->status == 200);
  // Another session is not concerned.
  const auto other = f.initialize();
  CHECK(f.legacy(other, {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", {{"name", "echo"}}}}, 7)
            ->status == 200);
  // Resumed: the answer goes to the connection, and the session's calls are taken again.
  auto resumed = f.request("GET", {{"mcp-session-id", session}, {"accept", "text/event-stream"},
                                   {"last-event-id", stream + "-0"}});
  REQUIRE(resumed->events().size() == 1);
  CHECK(budget->unsent(client) == 0);
  CHECK(f.legacy(session, {{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"}, {"params", {{"name", "echo"}}}}, 6)
            ->status == 200);
  CHECK(budget->total() == 0);
}

TEST_CASE("http endpoint: a stateless connection with unsent answers, or a server with too many, takes no call") {
  auto budget = std::make_shared<http::OutputBudget>(http::OutputLimits{1000, 5000});
  Fixture f({}, {}, budget);
  const json params = {{"name", "echo"}, {"arguments", json::object()}};
  budget->add(http::OutputBudget::connection_client(7), 1500);  // what the listener charges
  auto refused = f.stateless(1, "tools/call", params, {}, 7);
  CHECK(refused->status == 429);
  CHECK(refused->header("Retry-After") == "1");
  CHECK(refused->json_body()["id"] == 1);
  CHECK(f.stateless(2, "tools/list", json::object(), {}, 7)->status == 200);  // not a call
  CHECK(f.stateless(3, "tools/call", params, {}, 8)->status == 200);         // another connection
  budget->add(http::OutputBudget::connection_client(9), 900);
  budget->add(http::OutputBudget::connection_client(10), 900);
  budget->add(http::OutputBudget::connection_client(11), 900);
  budget->add(http::OutputBudget::connection_client(12), 900);
  auto busy = f.stateless(4, "tools/call", params, {}, 8);
  CHECK(busy->status == 503);
  CHECK_THAT(busy->json_body()["error"]["message"].get<std::string>(), Catch::Contains("whole server"));
  budget->remove(http::OutputBudget::connection_client(7), 1500);
  CHECK(f.stateless(5, "tools/call", params, {}, 8)->status == 200);
}
