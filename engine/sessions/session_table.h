// The sessions of the server by id, each with the owner that created it: the rules about which
// session a call may reach (only its owner's: another owner gets "unknown session", never the
// session), how many may exist (--max-sessions) and which have been idle too long
// (--session-idle-seconds). Pure bookkeeping over any payload, so that the rules are tested
// without processes (tests/engine/sessions/).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine {

// 128 random bits from the kernel's CSPRNG (OpenSSL RAND_bytes), as 32 lowercase hex digits.
std::string new_session_id();
// Whether `text` has the form of an id (so that a malformed one is refused as such).
bool looks_like_session_id(std::string_view text);

// nullopt when one more session fits (`existing` plus those being created), else the error.
std::optional<std::string> session_capacity_error(std::size_t existing, std::size_t creating, unsigned max_sessions);

// The message for an id the caller does not own or that does not exist (the same for both).
std::string unknown_session_message(std::string_view id);

template <typename T>
class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  struct Entry {
    std::string owner;
    T value;
    Clock::time_point created;
    Clock::time_point last_used;
    bool busy = false;  // a step is running or queued: never idle
  };

  void insert(const std::string& id, std::string owner, T value, Clock::time_point now) {
    entries_[id] = Entry{std::move(owner), std::move(value), now, now, false};
  }
  void erase(const std::string& id) { entries_.erase(id); }

  // The session `id` if `owner` created it; nullptr otherwise (also for another owner's).
  Entry* find(const std::string& owner, const std::string& id) {
    const auto it = entries_.find(id);
    if (it == entries_.end() || it->second.owner != owner) return nullptr;
    return &it->second;
  }
  Entry* find_any(const std::string& id) {
    const auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
  }

  void touch(const std::string& id, Clock::time_point now) {
    if (auto* e = find_any(id)) e->last_used = now;
  }
  void set_busy(const std::string& id, bool busy, Clock::time_point now) {
    if (auto* e = find_any(id)) {
      e->busy = busy;
      e->last_used = now;
    }
  }

  // The ids of `owner`'s sessions, oldest first.
  std::vector<std::string> ids_of(const std::string& owner) const {
    std::vector<std::pair<Clock::time_point, std::string>> found;
    for (const auto& [id, e] : entries_) {
      if (e.owner == owner) found.emplace_back(e.created, id);
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
  }
  std::vector<std::string> all_ids() const {
    std::vector<std::string> out;
    for (const auto& [id, e] : entries_) out.push_back(id);
    return out;
  }

  // Sessions unused for longer than `idle` (never one that is busy).
  std::vector<std::string> expired(Clock::time_point now, std::chrono::seconds idle) const {
    std::vector<std::string> out;
    for (const auto& [id, e] : entries_) {
      if (!e.busy && now - e.last_used >= idle) out.push_back(id);
    }
    return out;
  }
  // When the next session expires if nothing uses it (nullopt: none can).
  std::optional<Clock::time_point> next_expiry(std::chrono::seconds idle) const {
    std::optional<Clock::time_point> next;
    for (const auto& [id, e] : entries_) {
      if (e.busy) continue;
      const auto at = e.last_used + idle;
      if (!next || at < *next) next = at;
    }
    return next;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace engine
