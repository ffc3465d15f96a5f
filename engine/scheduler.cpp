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
  ++queued_;
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
  return true;
}

void Scheduler::finished(Id id) {
  running_.erase(id);
  if (offering_ && *offering_ == id) offered_ended_ = true;  // it ended before it was counted
}

std::vector<Scheduler::Id> Scheduler::offer_order() const {
  std::vector<Id> order;
  order.reserve(queued_);
  for (std::size_t depth = 0; order.size() < queued_; ++depth) {
    for (const auto& client : turn_) {
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
      running_.insert(id);
      // Whoever just got a slot waits for the others' turns.
      const auto pos = std::find(turn_.begin(), turn_.end(), client);
      if (pos != turn_.end()) {
        turn_.erase(pos);
        turn_.push_back(client);
      }
    }
  }
}

std::vector<Scheduler::Id> Scheduler::take_queued() {
  std::vector<Id> all = offer_order();
  by_client_.clear();
  turn_.clear();
  client_of_.clear();
  queued_ = 0;
  return all;
}

}  // namespace engine
