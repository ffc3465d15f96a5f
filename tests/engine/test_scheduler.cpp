// The run queue without any process: the bound, arrival order within a client, turns between
// clients, runs that are not ready, and runs that end or leave while they are offered.
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "engine/scheduler.h"

using engine::Scheduler;
using Step = Scheduler::Step;

namespace {

// Offers everything and starts what `ready` says; returns the ids started, in order.
std::vector<Scheduler::Id> pump_ready(Scheduler& s, const std::map<Scheduler::Id, bool>& ready) {
  std::vector<Scheduler::Id> started;
  s.pump([&](Scheduler::Id id) {
    const auto it = ready.find(id);
    if (it != ready.end() && !it->second) return Step::waiting;
    started.push_back(id);
    return Step::started;
  });
  return started;
}

}  // namespace

TEST_CASE("scheduler: at most max_running start; a finished run frees its slot") {
  Scheduler s(2);
  for (Scheduler::Id id = 1; id <= 5; ++id) s.enqueue(id);
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{1, 2});
  CHECK(s.running() == 2);
  CHECK(s.queued() == 3);
  CHECK(pump_ready(s, {}).empty());  // no slot
  s.finished(1);
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{3});
  s.finished(2);
  s.finished(3);
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{4, 5});
  CHECK(s.queued() == 0);
}

TEST_CASE("scheduler: a run that is not ready keeps its place without a slot") {
  Scheduler s(1);
  s.enqueue(1);
  s.enqueue(2);
  CHECK(pump_ready(s, {{1, false}}) == std::vector<Scheduler::Id>{2});
  CHECK(s.is_queued(1));
  CHECK(s.is_running(2));
  s.finished(2);
  CHECK(pump_ready(s, {{1, true}}) == std::vector<Scheduler::Id>{1});
}

TEST_CASE("scheduler: a dropped run leaves the queue without taking a slot") {
  Scheduler s(1);
  s.enqueue(1);
  s.enqueue(2);
  std::vector<Scheduler::Id> seen;
  s.pump([&](Scheduler::Id id) {
    seen.push_back(id);
    return id == 1 ? Step::dropped : Step::started;
  });
  CHECK(seen == std::vector<Scheduler::Id>{1, 2});
  CHECK(!s.is_queued(1));
  CHECK(s.is_running(2));
  CHECK(s.running() == 1);
}

TEST_CASE("scheduler: clients take turns; each client's runs keep their arrival order") {
  Scheduler s(1);
  // Client a sends a burst of four, then b and c one each.
  for (Scheduler::Id id = 1; id <= 4; ++id) s.enqueue(id, "a");
  s.enqueue(5, "b");
  s.enqueue(6, "c");
  std::vector<Scheduler::Id> order;
  while (s.queued() > 0) {
    const auto started = pump_ready(s, {});
    REQUIRE(started.size() == 1);
    order.push_back(started[0]);
    s.finished(started[0]);
  }
  // a's first, then b and c before a's second: the burst does not starve them.
  CHECK(order == std::vector<Scheduler::Id>{1, 5, 6, 2, 3, 4});
}

TEST_CASE("scheduler: remove takes a queued run out; unknown ids are ignored") {
  Scheduler s(4);
  s.enqueue(1, "a");
  s.enqueue(2, "b");
  CHECK(s.remove(1));
  CHECK_FALSE(s.remove(1));
  CHECK_FALSE(s.remove(42));
  s.finished(42);
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{2});
  s.enqueue(2);  // already running: not queued twice
  CHECK(s.queued() == 0);
}

TEST_CASE("scheduler: a run that ends while it is being offered does not keep a slot") {
  Scheduler s(1);
  s.enqueue(1);
  s.enqueue(2);
  s.pump([&](Scheduler::Id id) {
    if (id == 1) s.finished(1);  // dispatched and failed at once
    return Step::started;
  });
  // 1 ended within its offer, so 2 got the slot.
  CHECK_FALSE(s.is_running(1));
  CHECK(s.is_running(2));
}

TEST_CASE("scheduler: the offered run may remove later ones; take_queued empties the queue") {
  Scheduler s(3);
  for (Scheduler::Id id = 1; id <= 3; ++id) s.enqueue(id);
  std::vector<Scheduler::Id> seen;
  s.pump([&](Scheduler::Id id) {
    seen.push_back(id);
    if (id == 1) s.remove(2);  // e.g. cancelled from a callback
    return Step::waiting;
  });
  CHECK(seen == std::vector<Scheduler::Id>{1, 3});
  CHECK(s.take_queued() == std::vector<Scheduler::Id>{1, 3});
  CHECK(s.queued() == 0);
  CHECK(pump_ready(s, {}).empty());
}

TEST_CASE("scheduler: a client arriving behind another's backlog gets the next slot") {
  Scheduler s(1);
  s.enqueue(1, "a");
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{1});
  // a queues more while its first run goes; b arrives afterwards with one run.
  s.enqueue(2, "a");
  s.enqueue(3, "a");
  s.enqueue(4, "b");
  std::vector<Scheduler::Id> order;
  s.finished(1);
  while (s.queued() > 0) {
    const auto started = pump_ready(s, {});
    REQUIRE(started.size() == 1);
    order.push_back(started[0]);
    s.finished(started[0]);
  }
  // b has waited longest since its last start (never): it goes before a's backlog.
  CHECK(order == std::vector<Scheduler::Id>{4, 2, 3});
}

TEST_CASE("scheduler: with several slots, the client with fewer runs going comes first") {
  Scheduler s(2);
  s.enqueue(1, "a");
  s.enqueue(2, "a");
  s.enqueue(3, "a");
  s.enqueue(4, "b");
  // Two slots: a's first and b's only one, not a's first two.
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{1, 4});
  s.finished(4);
  s.enqueue(5, "b");
  // a has one going, b none: b's next run first, although a's runs waited longer.
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{5});
  s.finished(1);
  s.finished(5);
  CHECK(pump_ready(s, {}) == std::vector<Scheduler::Id>{2, 3});
}
