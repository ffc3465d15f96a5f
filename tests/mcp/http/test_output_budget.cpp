// Unsent response bytes per HTTP client and for the whole server (mcp/http/output_budget.h).
#include <catch2/catch.hpp>

#include "engine/engine.h"
#include "mcp/http/output_budget.h"
#include "mcp/intake.h"

namespace http = mcp::http;

TEST_CASE("output budget: a call is refused at the client's bound (429), then at the server's (503)", "[http]") {
  const http::OutputLimits limits{100, 1000};
  CHECK_FALSE(http::refuse_call(0, 0, limits));
  CHECK_FALSE(http::refuse_call(99, 999, limits));
  auto client = http::refuse_call(100, 100, limits);
  REQUIRE(client);
  CHECK(client->status == 429);
  CHECK(client->retry_after_seconds == 1);
  auto server = http::refuse_call(0, 1000, limits);
  REQUIRE(server);
  CHECK(server->status == 503);
}

TEST_CASE("output budget: bytes are counted per client and in total, never below zero", "[http]") {
  http::OutputBudget budget({100, 150});
  budget.add("a", 60);
  budget.add("b", 50);
  budget.add("a", 0);
  CHECK(budget.unsent("a") == 60);
  CHECK(budget.total() == 110);
  CHECK_FALSE(budget.refuse_call("a"));
  budget.add("a", 40);
  CHECK(budget.refuse_call("a")->status == 429);
  CHECK(budget.refuse_call("b")->status == 503);  // 150 in total
  budget.remove("a", 500);
  budget.remove("nobody", 5);
  CHECK(budget.unsent("a") == 0);
  CHECK(budget.total() == 50);
  CHECK_FALSE(budget.refuse_call("b"));
}

TEST_CASE("output budget: per client the stdio intake bound, four times that for the server", "[http]") {
  engine::EngineConfig config;
  const auto limits = http::output_limits(config);
  CHECK(limits.client_bytes == mcp::intake_limits(config).max_bytes);
  CHECK(limits.client_bytes >= (std::size_t{64} << 20));
  CHECK(limits.total_bytes == 4 * limits.client_bytes);
}
