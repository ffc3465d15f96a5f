#include "engine/sessions/step_history.h"

#include <algorithm>
#include <set>

namespace engine {

StepHistory::StepHistory(Handle root) { steps_[0] = root; }

StepHistory StepHistory::fork_at(std::uint64_t step) const {
  StepHistory copy;
  for (const auto& [n, handle] : steps_) {
    if (n <= step) copy.steps_[n] = handle;
  }
  copy.head_ = step;
  return copy;
}

StepHistory::Handle StepHistory::head_handle() const {
  const auto it = steps_.find(head_);
  return it == steps_.end() ? kNoHandle : it->second;
}

std::optional<StepHistory::Handle> StepHistory::handle_of(std::uint64_t step) const {
  const auto it = steps_.find(step);
  if (it == steps_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::uint64_t> StepHistory::kept() const {
  std::vector<std::uint64_t> out;
  for (const auto& [n, handle] : steps_) out.push_back(n);
  return out;
}

std::vector<StepHistory::Handle> StepHistory::handles() const {
  std::set<Handle> unique;
  for (const auto& [n, handle] : steps_) unique.insert(handle);
  return {unique.begin(), unique.end()};
}

bool StepHistory::holds(Handle handle) const {
  return std::any_of(steps_.begin(), steps_.end(), [handle](const auto& s) { return s.second == handle; });
}

std::vector<StepHistory::Handle> StepHistory::advance(Handle handle, std::size_t keep) {
  keep = std::max<std::size_t>(1, keep);
  head_ += 1;
  steps_[head_] = handle;
  std::vector<Handle> released;
  // Step 0 stays; of the others, the last `keep`.
  const std::size_t zero = steps_.count(0);
  while (steps_.size() - zero > keep) {
    const auto oldest = std::next(steps_.begin(), static_cast<std::ptrdiff_t>(zero));
    const Handle h = oldest->second;
    steps_.erase(oldest);
    if (!holds(h)) released.push_back(h);
  }
  return released;
}

void StepHistory::advance_in_place() {
  const Handle h = steps_.at(head_);
  if (head_ != 0) steps_.erase(head_);
  head_ += 1;
  steps_[head_] = h;
}

StepHistory::Rewind StepHistory::rewind(std::uint64_t step) {
  Rewind out;
  if (!has(step)) {
    out.error = step > head_ ? "step " + std::to_string(step) + " does not exist (the latest is " +
                                   std::to_string(head_) + ")"
                             : "step " + std::to_string(step) + " is no longer kept (kept: " + describe() +
                                   "; --session-snapshots sets how many)";
    return out;
  }
  std::vector<Handle> dropped;
  for (auto it = steps_.upper_bound(step); it != steps_.end();) {
    dropped.push_back(it->second);
    it = steps_.erase(it);
  }
  head_ = step;
  for (const Handle h : dropped) {
    if (!holds(h) && std::find(out.released.begin(), out.released.end(), h) == out.released.end()) {
      out.released.push_back(h);
    }
  }
  return out;
}

std::optional<std::uint64_t> StepHistory::forget(Handle handle) {
  const bool was_head = steps_.count(head_) != 0 && steps_.at(head_) == handle;
  for (auto it = steps_.begin(); it != steps_.end();) {
    if (it->second == handle) {
      it = steps_.erase(it);
    } else {
      ++it;
    }
  }
  if (!was_head) return std::nullopt;
  const auto it = steps_.upper_bound(head_);
  if (it == steps_.begin()) return std::nullopt;  // nothing at or before the head: empty()
  head_ = std::prev(it)->first;
  return head_;
}

std::string StepHistory::describe() const {
  std::string out;
  auto it = steps_.begin();
  while (it != steps_.end()) {
    const std::uint64_t first = it->first;
    std::uint64_t last = first;
    auto next = std::next(it);
    while (next != steps_.end() && next->first == last + 1) {
      last = next->first;
      ++next;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
    it = next;
  }
  return out;
}

}  // namespace engine
