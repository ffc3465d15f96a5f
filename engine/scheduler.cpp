#include "engine/scheduler.h"

#include <algorithm>

namespace engine {

Scheduler::Scheduler(unsigned max_running) : max_running_(std::max(1u, max_running)) {}

void Scheduler::enqueue(Id id, const std::string& client) {
  if (client_of_.count(id) != 0 || running_.count(id) != 0) return;
  auto& queue = by_client_[client];
  if (queue.empty()) turn_.push_back(client);
  queue.push_back(id);
  client_of_[id] = client;
  clients_.try_emplace(client);
  ++queued_;
}

void Scheduler::forget_if_idle(const std::string& client) {
  const auto it = clients_.find(client);
  if (it != clients_.end() && it->second.running == 0 && by_client_.count(client) == 0) {
    clients_.erase(it);
  }
}

bool Scheduler::remove(Id id) {
  const auto it = client_of_.find(id);
  if (it == client_of_.end()) return false;
  const std::string client = it->second;
  client_of_.erase(it);
  --queued_;
  auto& queue = by_client_[client];
  queue.erase(std::find(queue.begin(), queue.end(), id));
  if (queue.empty()) {
    by_client_.erase(client);
    turn_.erase(std::find(turn_.begin(), turn_.end(), client));
  }
  // The run being offered is removed before it counts as running (pump): its client's record
  // must survive that; pump forgets it when the run does not start.
  if (!(offering_ && *offering_ == id)) forget_if_idle(client);
  return true;
}

void Scheduler::finished(Id id) {
  const auto it = running_.find(id);
  if (it != running_.end()) {
    const std::string client = it->second;
    running_.erase(it);
    --clients_[client].running;
    forget_if_idle(client);
  }
  if (offering_ && *offering_ == id) offered_ended_ = true;  // it ended before it was counted
}

std::vector<Scheduler::Id> Scheduler::offer_order() const {
  // Clients with fewer runs going first, then the one served longest ago; ties by arrival.
  std::vector<std::string> clients(turn_.begin(), turn_.end());
  std::stable_sort(clients.begin(), clients.end(), [this](const std::string& a, const std::string& b) {
    const auto& ra = clients_.at(a);
    const auto& rb = clients_.at(b);
    if (ra.running != rb.running) return ra.running < rb.running;
    return ra.last_start < rb.last_start;
  });
  std::vector<Id> order;
  order.reserve(queued_);
  for (std::size_t depth = 0; order.size() < queued_; ++depth) {
    for (const auto& client : clients) {
      const auto& queue = by_client_.at(client);
      if (depth < queue.size()) order.push_back(queue[depth]);
    }
  }
  return order;
}

void Scheduler::pump(const std::function<Step(Id)>& step) {
  for (const Id id : offer_order()) {
    if (running_.size() >= max_running_) return;
    const auto it = client_of_.find(id);
    if (it == client_of_.end()) continue;  // removed while an earlier one was offered
    const std::string client = it->second;
    offering_ = id;
    offered_ended_ = false;
    const Step outcome = step(id);
    offering_.reset();
    if (outcome == Step::waiting) continue;
    if (!remove(id)) continue;  // the owner removed it itself
    if (outcome == Step::started && !offered_ended_) {
      running_[id] = client;
      auto& record = clients_[client];
      ++record.running;
      record.last_start = ++starts_;
      // Whoever just got a slot waits for the others' turns: the order is recomputed.
      pump(step);
      return;
    }
    forget_if_idle(client);
  }
}

std::vector<Scheduler::Id> Scheduler::take_queued() {
  std::vector<Id> all = offer_order();
  by_client_.clear();
  turn_.clear();
  client_of_.clear();
  queued_ = 0;
  for (auto it = clients_.begin(); it != clients_.end();) {
    it = it->second.running == 0 ? clients_.erase(it) : std::next(it);
  }
  return all;
}

}  // namespace engine
