// The warm zygotes of the server, by key (an interpreter, plus an environment or preloads): at
// most --max-zygotes at once (the least recently used idle one is stopped before another
// starts), and those idle past --zygote-idle-seconds stopped by a periodic sweep. The default
// interpreter's zygote is never stopped by either rule. State changes of every zygote are
// reported upward through one callback; the pool decides nothing about runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/pool/zygote_process.h"

namespace engine {

// What the eviction rules look at, for one zygote.
struct PoolEntryView {
  std::string key;
  bool is_default = false;
  std::size_t runs_in_flight = 0;
  ZygoteProcess::State state = ZygoteProcess::State::ready;
  std::chrono::steady_clock::time_point last_used;
};

// Before one more zygote starts with `entries` present: the key of the one to stop so that at
// most `bound` remain, or nullopt (room left, or every candidate is the default, busy or still
// starting: the pool then runs over the bound rather than make a run wait). Least recently
// used first.
std::optional<std::string> eviction_victim(const std::vector<PoolEntryView>& entries, std::size_t bound);

// The ready, idle, non-default zygotes unused for longer than `idle`.
std::vector<std::string> idle_victims(const std::vector<PoolEntryView>& entries,
                                      std::chrono::steady_clock::time_point now,
                                      std::chrono::seconds idle);

class ZygotePool {
 public:
  using StateFn = std::function<void(const std::string& key, ZygoteProcess::State, const std::string& reason)>;

  struct Config {
    unsigned max_zygotes = 4;
    unsigned idle_seconds = 600;
  };

  // `is_default(key)` says whether a key is the default interpreter's zygote.
  ZygotePool(asio::io_context& io, Config config, std::function<bool(const std::string& key)> is_default,
             StateFn on_state);
  ZygotePool(const ZygotePool&) = delete;
  ZygotePool& operator=(const ZygotePool&) = delete;

  // The zygote under `key` unless it failed or stopped.
  std::shared_ptr<ZygoteProcess> find(const std::string& key) const;
  // The zygote under `key`, started (after an eviction when the pool is full) when there is
  // none alive. `keep_alive` is held for as long as the zygote is (e.g. its environment's lease).
  std::shared_ptr<ZygoteProcess> get_or_start(const std::string& key, const ZygoteLaunch& launch,
                                               std::shared_ptr<void> keep_alive = {});
  // Forgets a zygote (after it failed); a later get_or_start starts a fresh one.
  void forget(const std::string& key);
  // Starts the periodic idle sweep.
  void start_idle_sweep();
  // Stops every zygote; `done` once each is reaped.
  void stop_all(std::function<void()> done);

  std::vector<PoolEntryView> entries() const;
  // Every zygote, for reports, in key order.
  const std::map<std::string, std::shared_ptr<ZygoteProcess>>& zygotes() const { return zygotes_; }

 private:
  void stop(const std::string& key, const std::string& why);
  void schedule_sweep();

  asio::io_context& io_;
  Config config_;
  std::function<bool(const std::string&)> is_default_;
  StateFn on_state_;
  std::map<std::string, std::shared_ptr<ZygoteProcess>> zygotes_;
  std::map<std::string, std::shared_ptr<void>> keep_alive_;
  asio::steady_timer sweep_timer_;
  bool stopping_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

 public:
  ~ZygotePool();
};

}  // namespace engine
