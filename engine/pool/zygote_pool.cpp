#include "engine/event_loop.h"  // first: see there
#include "engine/pool/zygote_pool.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace engine {

std::optional<std::string> eviction_victim(const std::vector<PoolEntryView>& entries, std::size_t bound) {
  bound = std::max<std::size_t>(1, bound);
  if (entries.size() < bound) return std::nullopt;
  const PoolEntryView* victim = nullptr;
  for (const auto& e : entries) {
    if (e.is_default || e.runs_in_flight > 0 || e.state == ZygoteProcess::State::starting) continue;
    if (victim == nullptr || e.last_used < victim->last_used) victim = &e;
  }
  if (victim == nullptr) return std::nullopt;
  return victim->key;
}

std::vector<std::string> idle_victims(const std::vector<PoolEntryView>& entries,
                                      std::chrono::steady_clock::time_point now,
                                      std::chrono::seconds idle) {
  std::vector<std::string> out;
  for (const auto& e : entries) {
    if (!e.is_default && e.runs_in_flight == 0 && e.state == ZygoteProcess::State::ready &&
        now - e.last_used > idle) {
      out.push_back(e.key);
    }
  }
  return out;
}

ZygotePool::ZygotePool(asio::io_context& io, Config config, std::function<bool(const std::string&)> is_default,
                       StateFn on_state)
    : io_(io), config_(config), is_default_(std::move(is_default)), on_state_(std::move(on_state)), sweep_timer_(io) {}

ZygotePool::~ZygotePool() { *alive_ = false; }

std::shared_ptr<ZygoteProcess> ZygotePool::find(const std::string& key) const {
  const auto it = zygotes_.find(key);
  if (it == zygotes_.end()) return nullptr;
  const auto state = it->second->state();
  if (state == ZygoteProcess::State::failed || state == ZygoteProcess::State::stopped) return nullptr;
  return it->second;
}

std::vector<PoolEntryView> ZygotePool::entries() const {
  std::vector<PoolEntryView> out;
  for (const auto& [key, z] : zygotes_) {
    out.push_back({key, is_default_(key), z->runs_in_flight(), z->state(), z->last_used()});
  }
  return out;
}

std::shared_ptr<ZygoteProcess> ZygotePool::get_or_start(const std::string& key, const ZygoteLaunch& launch,
                                                        std::shared_ptr<void> keep_alive) {
  if (auto existing = find(key)) return existing;
  // --max-zygotes: the least recently used idle one makes room.
  while (auto victim = eviction_victim(entries(), config_.max_zygotes)) {
    stop(*victim, "--max-zygotes " + std::to_string(std::max(1u, config_.max_zygotes)));
  }
  auto zygote = std::make_shared<ZygoteProcess>(io_, launch);
  zygotes_[key] = zygote;
  if (keep_alive) keep_alive_[key] = std::move(keep_alive);
  std::weak_ptr<bool> alive = alive_;
  zygote->start([this, alive, key](ZygoteProcess::State state, const std::string& reason) {
    if (alive.lock() && on_state_) on_state_(key, state, reason);
  });
  return zygote;
}

void ZygotePool::forget(const std::string& key) {
  zygotes_.erase(key);
  keep_alive_.erase(key);  // its environment may be evicted from the store again
}

void ZygotePool::stop(const std::string& key, const std::string& why) {
  const auto it = zygotes_.find(key);
  if (it == zygotes_.end()) return;
  spdlog::info("stopping the zygote for {}: {}", key, why);
  it->second->stop();
  forget(key);
}

void ZygotePool::start_idle_sweep() { schedule_sweep(); }

// Every minute, or twice per idle period when that is shorter.
void ZygotePool::schedule_sweep() {
  const auto half_idle = std::chrono::milliseconds(std::chrono::seconds(config_.idle_seconds)) / 2;
  sweep_timer_.expires_after(
      std::clamp<std::chrono::milliseconds>(half_idle, std::chrono::milliseconds(500), std::chrono::minutes(1)));
  std::weak_ptr<bool> alive = alive_;
  sweep_timer_.async_wait([this, alive](const std::error_code& ec) {
    if (ec || !alive.lock() || stopping_) return;
    const auto idle = std::chrono::seconds(config_.idle_seconds);
    for (const auto& key : idle_victims(entries(), std::chrono::steady_clock::now(), idle)) {
      stop(key, "idle for " + std::to_string(config_.idle_seconds) + " s");
    }
    schedule_sweep();
  });
}

void ZygotePool::stop_all(std::function<void()> done) {
  stopping_ = true;
  sweep_timer_.cancel();
  auto remaining = std::make_shared<std::size_t>(zygotes_.size() + 1);
  auto step = [remaining, done = std::move(done)] {
    if (--*remaining == 0 && done) done();
  };
  for (auto& [key, zygote] : zygotes_) zygote->stop(step);
  zygotes_.clear();
  keep_alive_.clear();
  step();
}

}  // namespace engine
