#include "engine/event_loop.h"  // first: see there
#include "engine/startup.h"

#include <unistd.h>

#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

namespace engine {

Startup::Startup(asio::io_context& io, asio::any_io_executor worker, InterpreterCatalog& catalog,
                 bool want_cgroups, bool warm_cache, Hooks hooks)
    : io_(io),
      worker_(std::move(worker)),
      catalog_(catalog),
      want_cgroups_(want_cgroups),
      warm_cache_(warm_cache),
      hooks_(std::move(hooks)),
      discovery_timer_(io),
      warm_timer_(io) {}

Startup::~Startup() { *alive_ = false; }

void Startup::begin(bool warm) {
  warm_ = warm_ || warm;
  if (begun_) return;
  begun_ = true;
  std::weak_ptr<bool> alive = alive_;
  catalog_.on_discovered([this, alive] {
    if (alive.lock()) after_discovery();
  });
  // Both the cgroups and the quick default known: warm, and let runs through.
  auto pending = std::make_shared<int>(2);
  auto both_done = [this, alive, pending] {
    if (!alive.lock() || --*pending != 0 || stopped_) return;
    const InterpreterChoice quick = catalog_.resolve(std::nullopt);
    if (warm_ && quick.interpreter) {
      // The full discovery waits for this zygote: both at once would compete for the CPU.
      discovery_after_ = quick.interpreter->executable;
      hooks_.warm(*quick.interpreter);
    } else {
      start_discovery();
    }
    ready_ = true;
    hooks_.ready();
  };
  asio::post(worker_, [this, &io = io_, alive, want = want_cgroups_,
                       tag = "mpes-" + std::to_string(::getpid()), both_done] {
    sandbox::CgroupSetup cgroups;
    if (want) cgroups = sandbox::prepare_cgroups(tag);
    asio::post(io, [this, alive, cgroups = std::move(cgroups), both_done] {
      if (!alive.lock()) return;
      cgroups_ = cgroups;
      both_done();
    });
  });
  catalog_.start_quick(both_done);
}

void Startup::start_discovery() {
  discovery_after_.clear();
  discovery_when_idle_ = false;
  discovery_timer_.cancel();
  catalog_.start_discovery();
}

void Startup::zygote_state(const std::string& key, ZygoteProcess::State state) {
  if (catalog_.discovery_started() || discovery_after_.empty() || key != discovery_after_) return;
  if (state == ZygoteProcess::State::starting) return;
  if (state == ZygoteProcess::State::ready && hooks_.busy()) {
    discovery_when_idle_ = true;
    std::weak_ptr<bool> alive = alive_;
    discovery_timer_.expires_after(kDiscoveryDeferredAtMost);
    discovery_timer_.async_wait([this, alive](const std::error_code& ec) {
      if (!ec && alive.lock() && !stopped_) start_discovery();
    });
    return;
  }
  start_discovery();
}

void Startup::idle() {
  if (discovery_when_idle_ && !stopped_) start_discovery();
}

void Startup::after_discovery() {
  if (stopped_) return;
  if (const auto& in = catalog_.default_interpreter()) {
    spdlog::info("default interpreter: Python {} ({})", in->version, in->executable);
  } else {
    const auto& error = catalog_.discovery_error();
    spdlog::error("no CPython >= 3.9 found{}", error.empty() ? "" : ": " + error);
  }
  if (warm_) {
    // The server's default zygote (or the --python-version one) warms now (if not already).
    if (auto in = catalog_.resolve(std::nullopt).interpreter) hooks_.warm(*in);
    // The installer's cache is warmed for the interpreter scripts run on (--python-version's
    // when given): wheels are per Python version, and what it already has is skipped.
    if (warm_cache_ && catalog_.resolve(std::nullopt).interpreter) {
      std::weak_ptr<bool> alive = alive_;
      warm_timer_.expires_after(kWarmCacheDelay);
      warm_timer_.async_wait([this, alive](const std::error_code& ec) {
        if (ec || !alive.lock() || stopped_) return;
        if (auto in = catalog_.resolve(std::nullopt).interpreter) hooks_.warm_cache(*in);
      });
    }
  }
  hooks_.discovered();
}

void Startup::stop() {
  stopped_ = true;
  discovery_timer_.cancel();
  warm_timer_.cancel();
}

}  // namespace engine
