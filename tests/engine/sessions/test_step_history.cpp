// Which steps of a session are kept (--session-snapshots), what rewinding and forking keep, and
// which processes each change lets go.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/sessions/step_history.h"

using engine::StepHistory;
using Handles = std::vector<StepHistory::Handle>;

TEST_CASE("step 0 is kept, plus the last N steps", "[sessions]") {
  StepHistory h(100);
  CHECK(h.head() == 0);
  CHECK(h.kept() == std::vector<std::uint64_t>{0});
  CHECK(h.advance(101, 2).empty());
  CHECK(h.advance(102, 2).empty());
  CHECK(h.advance(103, 2) == Handles{101});  // step 1 goes
  CHECK(h.head() == 3);
  CHECK(h.next_step() == 4);
  CHECK(h.kept() == std::vector<std::uint64_t>{0, 2, 3});
  CHECK(h.describe() == "0, 2-3");
  CHECK(h.head_handle() == 103);
  CHECK(h.handle_of(0) == 100);
  CHECK_FALSE(h.handle_of(1));
  // keep 0 is treated as 1: the head always stays.
  CHECK(h.advance(104, 0) == Handles{102, 103});
  CHECK(h.kept() == std::vector<std::uint64_t>{0, 4});
}

TEST_CASE("rewinding drops the later steps and numbers on from there", "[sessions]") {
  StepHistory h(10);
  h.advance(11, 8);
  h.advance(12, 8);
  h.advance(13, 8);
  auto r = h.rewind(1);
  CHECK(r.error.empty());
  CHECK(r.released == Handles{12, 13});
  CHECK(h.head() == 1);
  CHECK(h.next_step() == 2);
  CHECK(h.rewind(0).released == Handles{11});
  CHECK(h.head() == 0);
  CHECK(h.kept() == std::vector<std::uint64_t>{0});

  StepHistory g(20);
  g.advance(21, 1);
  g.advance(22, 1);
  CHECK_THAT(g.rewind(9).error, Catch::Contains("does not exist"));
  CHECK_THAT(g.rewind(1).error, Catch::Contains("no longer kept") && Catch::Contains("--session-snapshots"));
  CHECK(g.head() == 2);  // a refused rewind changes nothing
}

TEST_CASE("a fork keeps the steps up to its point; in-place steps leave no snapshot", "[sessions]") {
  StepHistory h(1);
  h.advance(2, 8);
  h.advance(3, 8);
  const StepHistory f = h.fork_at(1);
  CHECK(f.head() == 1);
  CHECK(f.kept() == std::vector<std::uint64_t>{0, 1});
  CHECK(f.holds(2));
  CHECK_FALSE(f.holds(3));

  // The head's process ran the step itself (it has threads): the step it started from is gone.
  h.advance_in_place();
  CHECK(h.head() == 3);
  CHECK(h.kept() == std::vector<std::uint64_t>{0, 1, 3});
  CHECK(h.head_handle() == 3);
  CHECK(h.handles() == Handles{1, 2, 3});
}

TEST_CASE("a process that is gone takes its steps; the head falls back to the latest kept", "[sessions]") {
  StepHistory h(1);
  h.advance(2, 8);
  h.advance(3, 8);
  CHECK_FALSE(h.forget(2));  // not the head: the head stays
  CHECK(h.kept() == std::vector<std::uint64_t>{0, 2});
  CHECK(h.forget(3) == 0u);
  CHECK(h.head() == 0);
  // Step 0's process gone too: nothing is left to continue from.
  CHECK_FALSE(h.forget(1));
  CHECK(h.empty());
  CHECK(h.kept().empty());
  CHECK(h.head_handle() == StepHistory::kNoHandle);
  CHECK_FALSE(h.has(0));
}

TEST_CASE("step 0 goes when its process does; retention and forks go on without it", "[sessions]") {
  // A step killed every other process of its session (kill(-1)), step 0's among them: its own
  // process holds the only state left.
  StepHistory h(1);
  h.advance(2, 2);
  h.advance(3, 2);
  CHECK_FALSE(h.forget(1));
  CHECK_FALSE(h.forget(2));
  CHECK(h.kept() == std::vector<std::uint64_t>{2});
  CHECK(h.describe() == "2");
  CHECK(h.head_handle() == 3);
  CHECK(h.rewind(0).error == "step 0 is no longer kept (kept: 2; --session-snapshots sets how many)");
  // The last 2 steps, with no step 0 to spare.
  CHECK(h.advance(4, 2).empty());
  CHECK(h.advance(5, 2) == Handles{3});
  CHECK(h.kept() == std::vector<std::uint64_t>{3, 4});
  const StepHistory f = h.fork_at(3);
  CHECK(f.kept() == std::vector<std::uint64_t>{3});
  CHECK(f.head_handle() == 4);
  // Its head's process gone with no earlier step kept: empty.
  CHECK_FALSE(h.forget(4));  // step 3, not the head
  CHECK_FALSE(h.forget(5));
  CHECK(h.empty());
}
