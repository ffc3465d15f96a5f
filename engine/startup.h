// The order in which the engine gets ready, so that the first call is answered as soon as it
// can be and nothing slow competes with it for the CPU:
//   1. cgroups are prepared and the quick default interpreter is probed (on the worker);
//   2. with warm-up asked for, the default zygote starts warming;
//   3. the full interpreter discovery starts once that zygote is up (or failed) -- while runs
//      are in flight, once they are done, or kDiscoveryDeferredAtMost later -- or at once when
//      something needs it (another version, a report, no quick default);
//   4. after the discovery, the default zygote (e.g. of --python-version) and the idle sweep;
//      cache warming kWarmCacheDelay later.
// Startup decides only when; what each step does is the owner's (hooks).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "engine/event_loop.h"
#include "engine/interpreters/catalog.h"
#include "engine/pool/zygote_process.h"
#include "sandbox/cgroup.h"

namespace engine {

class Startup {
 public:
  static constexpr std::chrono::seconds kDiscoveryDeferredAtMost{1};
  static constexpr std::chrono::seconds kWarmCacheDelay{10};

  struct Hooks {
    std::function<void(const Interpreter&)> warm;        // start (or keep) that interpreter's zygote
    std::function<void()> ready;                         // cgroups known: runs may be dispatched
    std::function<void()> discovered;                    // every interpreter is known
    std::function<void(const Interpreter&)> warm_cache;  // prefetch packages for the default
    std::function<bool()> busy;                          // runs are queued or running
  };

  Startup(asio::io_context& io, asio::any_io_executor worker, InterpreterCatalog& catalog,
          bool want_cgroups, bool warm_cache, Hooks hooks);
  Startup(const Startup&) = delete;
  Startup& operator=(const Startup&) = delete;
  ~Startup();

  // Step 1 (once); `warm` (latched) asks for steps 2 and 4.
  void begin(bool warm);
  // The full discovery, now.
  void start_discovery();
  // A zygote changed state: the deferred discovery may start.
  void zygote_state(const std::string& key, ZygoteProcess::State state);
  // No runs are left: a discovery deferred for them starts now.
  void idle();
  // Nothing more starts (timers cancelled).
  void stop();

  // Runs may be dispatched: the cgroups and the quick default are both known (step 1). Before
  // the quick default is, a run would find no interpreter and start the full discovery, which
  // then holds the worker ahead of the first zygote's start.
  bool ready() const { return ready_; }
  const sandbox::CgroupSetup& cgroups() const { return cgroups_; }

 private:
  void after_discovery();

  asio::io_context& io_;
  asio::any_io_executor worker_;
  InterpreterCatalog& catalog_;
  bool want_cgroups_;
  bool warm_cache_;
  Hooks hooks_;
  bool begun_ = false;
  bool warm_ = false;
  bool stopped_ = false;
  bool ready_ = false;
  sandbox::CgroupSetup cgroups_;
  std::string discovery_after_;  // the discovery waits for this zygote
  bool discovery_when_idle_ = false;
  asio::steady_timer discovery_timer_;
  asio::steady_timer warm_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace engine
