// The pool's rules as pure functions: which zygote makes room under --max-zygotes, and which are
// idle past --zygote-idle-seconds. No process is started.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "engine/pool/zygote_pool.h"

using engine::PoolEntryView;
using State = engine::ZygoteProcess::State;
using Clock = std::chrono::steady_clock;

namespace {

PoolEntryView entry(std::string key, int seconds_ago, bool is_default = false, std::size_t runs = 0,
                    State state = State::ready) {
  return {std::move(key), is_default, runs, state, Clock::time_point{} + std::chrono::hours(1) - std::chrono::seconds(seconds_ago)};
}

}  // namespace

TEST_CASE("eviction: nothing while there is room") {
  CHECK_FALSE(engine::eviction_victim({entry("a", 5), entry("b", 9)}, 3));
  CHECK_FALSE(engine::eviction_victim({}, 1));
}

TEST_CASE("eviction: the least recently used idle zygote makes room") {
  const std::vector<PoolEntryView> entries = {entry("a", 5), entry("b", 50), entry("c", 20)};
  CHECK(engine::eviction_victim(entries, 3) == std::optional<std::string>("b"));
  CHECK(engine::eviction_victim(entries, 2) == std::optional<std::string>("b"));
}

TEST_CASE("eviction: never the default, a busy one, or one still starting") {
  const std::vector<PoolEntryView> entries = {
      entry("default", 500, true), entry("busy", 400, false, 2), entry("starting", 300, false, 0, State::starting),
      entry("idle", 10)};
  CHECK(engine::eviction_victim(entries, 4) == std::optional<std::string>("idle"));
  // Without an idle one the pool runs over its bound rather than make a run wait.
  const std::vector<PoolEntryView> none = {entry("default", 500, true), entry("busy", 400, false, 1)};
  CHECK_FALSE(engine::eviction_victim(none, 1));
}

TEST_CASE("eviction: a bound of 0 counts as 1") {
  CHECK(engine::eviction_victim({entry("a", 5)}, 0) == std::optional<std::string>("a"));
}

TEST_CASE("idle sweep: ready, idle and non-default zygotes unused past the limit") {
  const auto now = Clock::time_point{} + std::chrono::hours(1);
  const std::vector<PoolEntryView> entries = {
      entry("old", 120),
      entry("recent", 30),
      entry("default", 999, true),
      entry("busy", 999, false, 1),
      entry("failed", 999, false, 0, State::failed),
      entry("starting", 999, false, 0, State::starting)};
  CHECK(engine::idle_victims(entries, now, std::chrono::seconds(60)) == std::vector<std::string>{"old"});
  CHECK(engine::idle_victims(entries, now, std::chrono::seconds(10)) == std::vector<std::string>{"old", "recent"});
  CHECK(engine::idle_victims(entries, now, std::chrono::seconds(1000)).empty());
}
