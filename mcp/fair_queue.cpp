#include "mcp/fair_queue.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

namespace mcp {

struct FairQueue::Ticket::Entry {
  std::string client;
  std::function<void()> start;
  bool started = false;
};

struct FairQueue::Ticket::State {
  asio::io_context& io;
  std::size_t slots;
  std::size_t max_waiting;
  std::size_t running = 0;
  std::size_t waiting = 0;
  std::map<std::string, std::deque<std::shared_ptr<Entry>>> queues;  // clients with calls waiting
  std::deque<std::string> turn;                                      // waiting clients, by arrival
  struct Client {
    std::size_t running = 0;
    std::uint64_t last_served = 0;  // 0: not since it was last idle
  };
  std::map<std::string, Client> clients;  // clients with calls waiting or running
  std::uint64_t served = 0;

  State(asio::io_context& context, std::size_t n, std::size_t max) : io(context), slots(n), max_waiting(max) {}

  void pump() {
    while (running < slots && !turn.empty()) {
      auto best = turn.begin();
      for (auto it = turn.begin(); it != turn.end(); ++it) {
        const auto& a = clients[*it];
        const auto& b = clients[*best];
        if (a.running < b.running || (a.running == b.running && a.last_served < b.last_served)) best = it;
      }
      const std::string client = *best;
      turn.erase(best);
      auto& queue = queues[client];
      auto entry = queue.front();
      queue.pop_front();
      --waiting;
      if (queue.empty()) {
        queues.erase(client);
      } else {
        turn.push_back(client);
      }
      auto& info = clients[client];
      ++info.running;
      info.last_served = ++served;
      entry->started = true;
      ++running;
      asio::post(io, std::move(entry->start));
    }
  }

  void forget_if_idle(const std::string& client) {
    const auto it = clients.find(client);
    if (it != clients.end() && it->second.running == 0 && queues.count(client) == 0) clients.erase(it);
  }
};

FairQueue::Ticket::Ticket(std::weak_ptr<State> queue, std::shared_ptr<Entry> entry)
    : queue_(std::move(queue)), entry_(std::move(entry)) {}

FairQueue::Ticket::~Ticket() {
  auto state = queue_.lock();
  if (!state) return;
  if (entry_->started) {
    --state->running;
    --state->clients[entry_->client].running;
    state->forget_if_idle(entry_->client);
    state->pump();
    return;
  }
  const auto it = state->queues.find(entry_->client);
  if (it == state->queues.end()) return;
  auto& queue = it->second;
  queue.erase(std::remove(queue.begin(), queue.end(), entry_), queue.end());
  --state->waiting;
  if (queue.empty()) {
    state->queues.erase(it);
    state->turn.erase(std::remove(state->turn.begin(), state->turn.end(), entry_->client),
                      state->turn.end());
    state->forget_if_idle(entry_->client);
  }
}

bool FairQueue::Ticket::started() const { return entry_->started; }

FairQueue::FairQueue(asio::io_context& io, std::size_t slots, std::size_t max_waiting_per_client)
    : state_(std::make_shared<Ticket::State>(io, std::max<std::size_t>(slots, 1),
                                             max_waiting_per_client)) {}

FairQueue::~FairQueue() = default;

std::unique_ptr<FairQueue::Ticket> FairQueue::submit(const std::string& client,
                                                     std::function<void()> start) {
  auto& queue = state_->queues[client];
  if (queue.size() >= state_->max_waiting) {
    if (queue.empty()) state_->queues.erase(client);
    return nullptr;
  }
  state_->clients.try_emplace(client);
  auto entry = std::make_shared<Ticket::Entry>();
  entry->client = client;
  entry->start = std::move(start);
  if (queue.empty()) state_->turn.push_back(client);
  queue.push_back(entry);
  ++state_->waiting;
  auto ticket = std::make_unique<Ticket>(state_, entry);
  state_->pump();
  return ticket;
}

std::size_t FairQueue::running() const { return state_->running; }

std::size_t FairQueue::waiting() const { return state_->waiting; }

}  // namespace mcp
