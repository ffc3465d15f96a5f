#include "mcp/interpreter_catalog.h"

#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

namespace mcp {

namespace {
std::atomic<int> probes_running{0};
}  // namespace

int background_probes_running() { return probes_running.load(); }

bool interpreter_matches(const engine::Interpreter& interpreter, const std::string& version) {
  return interpreter.major_minor == version || interpreter.version == version;
}

std::optional<engine::Interpreter> InterpreterSnapshot::select(
    const std::optional<std::string>& version, std::string* why) const {
  std::optional<engine::Interpreter> found =
      version ? engine::select_interpreter(all, *version) : engine::default_interpreter(all);
  if (found) return found;
  if (why != nullptr) {
    std::string available;
    for (const auto& in : all) {
      available += (available.empty() ? "" : ", ") + in.version + " (" + in.executable + ")";
    }
    if (available.empty()) {
      *why = "No CPython 3.9 or later was found on this host" +
             (error.empty() ? std::string() : " (" + error + ")");
    } else if (version) {
      *why = "Python " + *version + " is not available on this host; available: " + available;
    } else {
      *why = "No default Python interpreter; available: " + available;
    }
  }
  return std::nullopt;
}

// Io-thread state, plus what the probing threads need to hand results back.
struct InterpreterCatalog::State : std::enable_shared_from_this<InterpreterCatalog::State> {
  InterpreterSources sources;
  // Guarded by mutex: cleared when the catalog goes away, so late probes post nowhere.
  std::mutex mutex;
  asio::io_context* io = nullptr;

  // Io thread only.
  bool quick_started = false, quick_done = false;
  std::optional<engine::Interpreter> quick;
  bool full_started = false;
  std::optional<InterpreterSnapshot> full;
  std::vector<std::pair<std::optional<std::string>, SelectFn>> select_waiters;
  std::vector<AllFn> all_waiters;

  // Runs `work` on its own thread and `deliver(result)` on the io thread.
  template <typename Work, typename Deliver>
  void run_in_background(Work work, Deliver deliver) {
    std::weak_ptr<State> weak = weak_from_this();
    auto self = shared_from_this();
    ++probes_running;
    std::thread([self, weak, work = std::move(work), deliver = std::move(deliver)]() mutable {
      auto result = work();
      --probes_running;
      std::lock_guard<std::mutex> lock(self->mutex);
      if (self->io == nullptr) return;
      asio::post(*self->io, [weak, deliver = std::move(deliver), result = std::move(result)]() mutable {
        if (auto state = weak.lock()) deliver(*state, std::move(result));
      });
    }).detach();
  }

  void start_quick() {
    if (quick_started) return;
    quick_started = true;
    if (!sources.quick_default) {
      deliver_quick(std::nullopt);
      return;
    }
    run_in_background(
        [probe = sources.quick_default]() -> std::optional<engine::Interpreter> {
          try {
            return probe();
          } catch (const std::exception& e) {
            spdlog::debug("quick interpreter probe failed: {}", e.what());
            return std::nullopt;
          }
        },
        [](State& state, std::optional<engine::Interpreter> result) { state.deliver_quick(std::move(result)); });
  }

  void deliver_quick(std::optional<engine::Interpreter> result) {
    quick_done = true;
    quick = std::move(result);
    auto waiters = std::move(select_waiters);
    select_waiters.clear();
    for (auto& [version, done] : waiters) select(std::move(version), std::move(done));
  }

  void start_full() {
    if (full_started) return;
    full_started = true;
    run_in_background(
        [discover = sources.discover_all] {
          InterpreterSnapshot snapshot;
          try {
            snapshot.all = discover();
          } catch (const std::exception& e) {
            snapshot.error = e.what();
          }
          return snapshot;
        },
        [](State& state, InterpreterSnapshot snapshot) {
          if (!snapshot.error.empty()) spdlog::warn("interpreter discovery failed: {}", snapshot.error);
          state.full = std::move(snapshot);
          auto selects = std::move(state.select_waiters);
          state.select_waiters.clear();
          auto alls = std::move(state.all_waiters);
          state.all_waiters.clear();
          for (auto& [version, done] : selects) state.select(std::move(version), std::move(done));
          for (auto& done : alls) done(*state.full);
        });
  }

  void select(std::optional<std::string> version, SelectFn done) {
    if (full) {
      std::string why;
      auto found = full->select(version, &why);
      done(std::move(found), why);
      return;
    }
    if (quick_done) {
      if (quick && (!version || interpreter_matches(*quick, *version))) {
        done(quick, "");
        return;
      }
      select_waiters.emplace_back(std::move(version), std::move(done));
      start_full();
      return;
    }
    select_waiters.emplace_back(std::move(version), std::move(done));
    start_quick();
  }
};

InterpreterCatalog::InterpreterCatalog(asio::io_context& io, InterpreterSources sources)
    : state_(std::make_shared<State>()) {
  state_->sources = std::move(sources);
  state_->io = &io;
}

InterpreterCatalog::~InterpreterCatalog() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->io = nullptr;
}

void InterpreterCatalog::select(std::optional<std::string> version, SelectFn done) {
  state_->select(std::move(version), std::move(done));
}

void InterpreterCatalog::all(AllFn done) {
  if (state_->full) {
    done(*state_->full);
    return;
  }
  state_->all_waiters.push_back(std::move(done));
  state_->start_full();
}

bool InterpreterCatalog::busy() const {
  const auto& s = *state_;
  return (s.quick_started && !s.quick_done) || (s.full_started && !s.full);
}

InterpreterSources host_interpreter_sources(std::string uv_path) {
  InterpreterSources sources;
  sources.quick_default = []() -> std::optional<engine::Interpreter> {
    // engine::default_interpreter prefers Debian's own /usr/bin/python3 (not a venv) whenever
    // it exists, so when that probe succeeds it is the default a full discovery would pick.
    std::error_code ec;
    const auto system = std::filesystem::canonical("/usr/bin/python3", ec);
    if (ec) return std::nullopt;
    std::string error;
    auto probed = engine::probe_interpreter("/usr/bin/python3", &error);
    if (!probed || probed->executable != system.string() || probed->prefix != probed->base_prefix) {
      return std::nullopt;
    }
    probed->source = "/usr/bin";
    return probed;
  };
  sources.discover_all = [uv_path = std::move(uv_path)] {
    engine::DiscoveryOptions options;
    options.uv_path = uv_path;
    return engine::discover_interpreters(options);
  };
  return sources;
}

}  // namespace mcp
