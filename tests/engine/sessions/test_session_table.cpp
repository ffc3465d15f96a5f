// Which session a call may reach (only its owner's), --max-sessions, --session-idle-seconds, and
// the ids themselves.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>

#include "engine/sessions/session_table.h"

using Table = engine::SessionTable<int>;
using namespace std::chrono_literals;

TEST_CASE("a session is found only by the owner that created it", "[sessions]") {
  Table t;
  const auto now = Table::Clock::now();
  t.insert("s1", "alice", 1, now);
  t.insert("s2", "bob", 2, now + 1s);
  t.insert("s3", "alice", 3, now + 2s);
  REQUIRE(t.find("alice", "s1") != nullptr);
  CHECK(t.find("alice", "s1")->value == 1);
  CHECK(t.find("bob", "s1") == nullptr);
  CHECK(t.find("", "s1") == nullptr);
  CHECK(t.find("alice", "nope") == nullptr);
  CHECK(t.ids_of("alice") == std::vector<std::string>{"s1", "s3"});
  CHECK(t.ids_of("bob") == std::vector<std::string>{"s2"});
  CHECK(t.ids_of("carol").empty());
  // The message is the same whether the id exists for someone else or not at all.
  CHECK(engine::unknown_session_message("s1") == "unknown session 's1': no session of yours has this id (it may "
                                                 "have been closed, expired after --session-idle-seconds, or "
                                                 "ended with the server); create_session makes a new one");
}

TEST_CASE("idle sessions expire; busy ones never do", "[sessions]") {
  Table t;
  const auto t0 = Table::Clock::now();
  t.insert("a", "o", 1, t0);
  t.insert("b", "o", 2, t0);
  t.set_busy("b", true, t0);
  CHECK(t.expired(t0 + 9s, 10s).empty());
  CHECK(t.expired(t0 + 10s, 10s) == std::vector<std::string>{"a"});
  CHECK(t.next_expiry(10s) == t0 + 10s);
  t.touch("a", t0 + 5s);
  CHECK(t.expired(t0 + 10s, 10s).empty());
  CHECK(t.next_expiry(10s) == t0 + 15s);
  t.set_busy("b", false, t0 + 20s);
  CHECK(t.expired(t0 + 29s, 10s) == std::vector<std::string>{"a"});
  t.erase("a");
  t.erase("b");
  CHECK_FALSE(t.next_expiry(10s));
  CHECK(t.size() == 0);
}

TEST_CASE("--max-sessions counts the sessions being created too", "[sessions]") {
  CHECK_FALSE(engine::session_capacity_error(0, 0, 8));
  CHECK_FALSE(engine::session_capacity_error(6, 1, 8));
  CHECK_THAT(*engine::session_capacity_error(7, 1, 8), Catch::Contains("--max-sessions 8"));
  CHECK(engine::session_capacity_error(0, 0, 0));  // 0: sessions off
}

TEST_CASE("session ids are 128 random bits in hex", "[sessions]") {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const auto id = engine::new_session_id();
    CHECK(engine::looks_like_session_id(id));
    seen.insert(id);
  }
  CHECK(seen.size() == 200);
  CHECK_FALSE(engine::looks_like_session_id("../../etc"));
  CHECK_FALSE(engine::looks_like_session_id(std::string(32, 'A')));
  CHECK_FALSE(engine::looks_like_session_id(std::string(31, 'a')));
}
