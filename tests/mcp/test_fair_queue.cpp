// Run slots shared fairly between clients.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "mcp/call_table.h"
#include "mcp/fair_queue.h"

namespace {

struct Recorder {
  asio::io_context io;
  std::vector<std::string> started;

  std::function<void()> start(std::string name) {
    return [this, name = std::move(name)] { started.push_back(name); };
  }
  void drain() {
    io.restart();
    io.poll();
  }
};

}  // namespace

TEST_CASE("fair queue: free slots start calls on the io context, never inside submit") {
  Recorder r;
  mcp::FairQueue queue(r.io, 2, 8);
  auto a = queue.submit("alice", r.start("a1"));
  REQUIRE(a);
  CHECK(r.started.empty());
  CHECK(a->started());
  r.drain();
  CHECK(r.started == std::vector<std::string>{"a1"});
  CHECK(queue.running() == 1);
}

TEST_CASE("fair queue: freed slots go to waiting clients in turn") {
  Recorder r;
  mcp::FairQueue queue(r.io, 1, 8);
  std::vector<std::unique_ptr<mcp::FairQueue::Ticket>> tickets;
  tickets.push_back(queue.submit("alice", r.start("a1")));  // runs
  tickets.push_back(queue.submit("alice", r.start("a2")));
  tickets.push_back(queue.submit("alice", r.start("a3")));
  tickets.push_back(queue.submit("bob", r.start("b1")));
  tickets.push_back(queue.submit("carol", r.start("c1")));
  r.drain();
  CHECK(queue.running() == 1);
  CHECK(queue.waiting() == 4);
  // Each freed slot goes to a client served less recently, not to alice's backlog.
  for (std::size_t i = 0; i < tickets.size(); ++i) {
    for (auto& t : tickets) {
      if (t && t->started()) {
        t.reset();
        break;
      }
    }
    r.drain();
  }
  CHECK(r.started == std::vector<std::string>{"a1", "b1", "c1", "a2", "a3"});
  CHECK(queue.running() == 0);
  CHECK(queue.waiting() == 0);
}

TEST_CASE("fair queue: with several slots, the client with fewer runs going comes first") {
  Recorder r;
  mcp::FairQueue queue(r.io, 2, 8);
  auto a1 = queue.submit("alice", r.start("a1"));
  auto a2 = queue.submit("alice", r.start("a2"));
  auto a3 = queue.submit("alice", r.start("a3"));
  auto b1 = queue.submit("bob", r.start("b1"));
  r.drain();
  CHECK(r.started == std::vector<std::string>{"a1", "a2"});
  a1.reset();  // alice still has a2 going, bob none: bob's turn
  r.drain();
  CHECK(r.started == std::vector<std::string>{"a1", "a2", "b1"});
}

TEST_CASE("fair queue: a withdrawn call never starts and frees its place") {
  Recorder r;
  mcp::FairQueue queue(r.io, 1, 2);
  auto running = queue.submit("alice", r.start("a1"));
  auto waiting = queue.submit("bob", r.start("b1"));
  auto other = queue.submit("bob", r.start("b2"));
  CHECK_FALSE(queue.submit("bob", r.start("b3")));  // bob's queue is full
  waiting.reset();
  CHECK(queue.waiting() == 1);
  running.reset();
  r.drain();
  CHECK(r.started == std::vector<std::string>{"a1", "b2"});
  CHECK(queue.submit("bob", r.start("b4")));  // room again
}

TEST_CASE("fair queue: a ticket outliving its queue is harmless") {
  Recorder r;
  std::unique_ptr<mcp::FairQueue::Ticket> ticket;
  {
    mcp::FairQueue queue(r.io, 1, 1);
    ticket = queue.submit("alice", r.start("a1"));
  }
  ticket.reset();
  r.drain();
  CHECK(r.started == std::vector<std::string>{"a1"});
}

TEST_CASE("fair queue: tools/call of a run-slot tool waits its turn; cancelled while waiting, it never runs") {
  Recorder r;
  mcp::FairQueue queue(r.io, 1, 8);
  mcp::ToolRegistry tools;
  std::vector<std::shared_ptr<mcp::ToolCall>> running;
  mcp::ToolDefinition slow;
  slow.name = "slow";
  slow.input_schema = {{"type", "object"}};
  slow.takes_run_slot = true;
  slow.handler = [&](std::shared_ptr<mcp::ToolCall> call) { running.push_back(call); };
  tools.add(slow);
  mcp::CallTable table;
  std::vector<nlohmann::json> out;
  auto call = [&](int id, const std::string& client) {
    mcp::CallOptions options;
    options.queue = &queue;
    options.client = client;
    table.call_tool(tools, id, std::to_string(id), {{"name", "slow"}}, options,
                    mcp::Outlet{nullptr, [&](std::optional<nlohmann::json> response) {
                                  if (response) out.push_back(*response);
                                }});
  };
  call(1, "alice");
  call(2, "alice");
  call(3, "bob");
  r.drain();
  REQUIRE(running.size() == 1);
  CHECK(table.cancel("2"));  // waiting: withdrawn, and no answer is sent
  running[0]->finish({{"content", nlohmann::json::array()}});
  r.drain();
  REQUIRE(running.size() == 2);  // bob's call got the slot, alice's cancelled one never ran
  running[1]->finish({{"content", nlohmann::json::array()}});
  REQUIRE(out.size() == 2);
  CHECK(out[0]["id"] == 1);
  CHECK(out[1]["id"] == 3);
  CHECK(table.size() == 0);
  CHECK(queue.running() == 0);
}
