// The stdio intake bound (mcp/intake.h): when a new call may start, what counts as one.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "mcp/intake.h"

using nlohmann::json;

TEST_CASE("the reply bound adds up what one reply may carry under the limits") {
  engine::EngineConfig config;
  config.max_output_bytes = 102400;
  config.max_images = 4;
  config.max_output_file_bytes = 10u << 20;
  // 7 x 100 KiB, 4 figures of 1 MiB and 10 MiB of files in base64, 128 KiB of envelope.
  const std::size_t figure = 1398104;  // base64 of 1 MiB
  CHECK(mcp::reply_bound_bytes(config) == 7 * 102400 + 4 * figure + 13981016 + (128 << 10));
  config.max_images = 0;
  config.max_output_file_bytes = 0;
  config.max_output_bytes = 1024;
  CHECK(mcp::reply_bound_bytes(config) == 7 * 1024 + (128 << 10));
}

TEST_CASE("the intake bound: 64 MiB at least, else one reply more than the run slots") {
  engine::EngineConfig config;
  config.max_concurrent_runs = 4;
  const std::size_t reply = mcp::reply_bound_bytes(config);
  CHECK(mcp::intake_limits(config).max_bytes == 5 * reply);
  CHECK(mcp::intake_limits(config).max_calls == 256);
  config.max_images = 0;
  config.max_output_file_bytes = 0;
  config.max_concurrent_runs = 1;
  CHECK(mcp::intake_limits(config).max_bytes == std::size_t{64} << 20);
}

TEST_CASE("calls may start while their shares fit beside the queue and the calls in flight") {
  const mcp::IntakeLimits limits{1000, 3};
  CHECK(mcp::may_start_calls({0, 0, 0}, 1, 400, limits));
  CHECK(mcp::may_start_calls({0, 400, 1}, 1, 400, limits));
  CHECK(mcp::may_start_calls({200, 400, 1}, 1, 400, limits));    // exactly full
  CHECK_FALSE(mcp::may_start_calls({201, 400, 1}, 1, 400, limits));
  CHECK_FALSE(mcp::may_start_calls({0, 800, 2}, 1, 400, limits));
  CHECK_FALSE(mcp::may_start_calls({1500, 0, 1}, 1, 1, limits));  // over the bound already
  CHECK_FALSE(mcp::may_start_calls({0, 30, 3}, 1, 10, limits));   // too many calls
  CHECK(mcp::may_start_calls({0, 30, 2}, 1, 10, limits));
  // A message larger than the bound by itself starts when nothing else is in progress, never
  // beside anything.
  CHECK(mcp::may_start_calls({0, 0, 0}, 1, 5000, limits));
  CHECK_FALSE(mcp::may_start_calls({1, 0, 0}, 1, 5000, limits));
  CHECK_FALSE(mcp::may_start_calls({0, 1, 1}, 1, 5000, limits));
  CHECK(mcp::may_start_calls({10, 0, 0}, 1, 990, limits));  // replies queued, no call: room counts
  // A batch: every call in it counts, in bytes and in number.
  CHECK(mcp::may_start_calls({100, 100, 1}, 2, 400, limits));
  CHECK_FALSE(mcp::may_start_calls({101, 100, 1}, 2, 400, limits));
  CHECK_FALSE(mcp::may_start_calls({0, 10, 1}, 3, 10, limits));  // 4 calls > 3
  CHECK(mcp::may_start_calls({0, 0, 0}, 50, 400, limits));       // alone: taken whole
  // A message that starts no call is never held back.
  CHECK(mcp::may_start_calls({5000, 5000, 3}, 0, 400, limits));
}

TEST_CASE("a batch's calls start while its held replies and running calls fit, else wait or are refused") {
  using mcp::BatchCall;
  using mcp::next_batch_call;
  // held, running, reply bound, max
  CHECK(next_batch_call(0, 0, 400, 1000) == BatchCall::start);
  CHECK(next_batch_call(0, 1, 400, 1000) == BatchCall::start);   // 2 x 400 fit
  CHECK(next_batch_call(0, 2, 400, 1000) == BatchCall::wait);    // 3 x 400 do not
  CHECK(next_batch_call(200, 1, 400, 1000) == BatchCall::start);  // exactly full
  CHECK(next_batch_call(201, 1, 400, 1000) == BatchCall::wait);
  CHECK(next_batch_call(600, 0, 400, 1000) == BatchCall::start);
  CHECK(next_batch_call(601, 0, 400, 1000) == BatchCall::refuse);  // nothing runs to make room
  CHECK(next_batch_call(5000, 0, 400, 1000) == BatchCall::refuse);
  CHECK(next_batch_call(5000, 2, 400, 1000) == BatchCall::wait);
  // The first call always starts, however large its bound; no bound: everything starts.
  CHECK(next_batch_call(0, 0, 5000, 1000) == BatchCall::start);
  CHECK(next_batch_call(1, 0, 5000, 1000) == BatchCall::refuse);
  CHECK(next_batch_call(1u << 30, 99, 1u << 30, 0) == BatchCall::start);
}

TEST_CASE("tools/call requests are counted, alone or in a batch") {
  CHECK(mcp::calls_started(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")) == 1);
  CHECK(mcp::calls_started(json::parse(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])")) == 0);
  CHECK(mcp::calls_started(json::parse(
            R"([{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","id":2,"method":"ping"},)"
            R"({"jsonrpc":"2.0","id":3,"method":"tools/call"},{"jsonrpc":"2.0","method":"tools/call"}])")) == 2);
  CHECK(mcp::calls_started(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping"})")) == 0);
  CHECK(mcp::calls_started(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")) == 0);
  CHECK(mcp::calls_started(
            json::parse(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})")) == 0);
  CHECK(mcp::calls_started(json::parse(R"({"jsonrpc":"2.0","method":"tools/call"})")) == 0);  // no id
  CHECK(mcp::calls_started(json::parse(R"({"jsonrpc":"2.0","id":1,"method":7})")) == 0);
  CHECK(mcp::calls_started(json::parse("42")) == 0);
}
