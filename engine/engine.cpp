// The execution engine: a bounded run queue in front of one warm zygote per interpreter, all on
// the server's single-threaded io_context. Blocking work (interpreter discovery, cgroup setup,
// the host probe) runs on a small thread pool and posts its result back.
//
// A run: queued -> dispatched to a ready zygote (script memfd + stdout/stderr/result pipes +
// cgroup fds) -> STARTED (pidfd) -> EXITED (wait status, rusage) and all pipes at EOF -> result.
// The server owns the deadline: at expiry (or on cancel/shutdown) the run's init is killed
// through its pidfd, which takes the run's whole pid namespace with it.
#include "engine/event_loop.h"  // first: see there
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/engine.h"
#include "engine/environments/environments.h"
#include "engine/interpreters/probe_cache.h"
#include "engine/interpreters/discovery.h"
#include "engine/execution/output_capture.h"
#include "engine/execution/result_channel.h"
#include "engine/packaging/script_metadata.h"
#include "engine/pool/zygote_process.h"
#include "profiles/mpes_profiles.h"
#include "sandbox/cgroup.h"
#include "sandbox/end_reason.h"
#include "sandbox/probe.h"
#include "sandbox/unique_fd.h"

namespace engine {
namespace {

using sandbox::UniqueFd;
using Clock = std::chrono::steady_clock;

// After the deadline (or a cancel) the run is answered within this, whatever the zygote does.
constexpr auto kKillAnswerWithin = std::chrono::milliseconds(300);
// After the run's process is gone, how long its pipes may stay open (unsandboxed runs can leave
// daemons holding them) before the output read so far is final.
constexpr auto kPipeDrainGrace = std::chrono::milliseconds(200);
constexpr std::size_t kReadChunk = 64 * 1024;
// The full interpreter discovery waits for the first runs at most this long.
constexpr auto kDiscoveryDeferredAtMost = std::chrono::seconds(1);

std::string default_zygote_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "mcp-python-exec-sandbox-zygote";
  return (self.parent_path() / "mcp-python-exec-sandbox-zygote").string();
}

// "3.13.0, 3.12.1, ...": newest first, as a user scans for the one to ask for.
std::string versions_list(std::vector<Interpreter> found) {
  const auto numbers = [](const std::string& version) {
    std::vector<int> parts;
    int value = 0;
    for (const char c : version + ".") {
      if (c >= '0' && c <= '9') {
        value = value * 10 + (c - '0');
      } else {
        parts.push_back(value);
        value = 0;
      }
    }
    return parts;
  };
  std::stable_sort(found.begin(), found.end(), [&](const Interpreter& a, const Interpreter& b) {
    return numbers(a.version) > numbers(b.version);
  });
  std::string out;
  for (const auto& in : found) {
    if (!out.empty()) out += ", ";
    out += in.version;
  }
  return out.empty() ? "none" : out;
}

EndReason to_end_reason(sandbox::RunEnd end) {
  switch (end) {
    case sandbox::RunEnd::exit: return EndReason::exit;
    case sandbox::RunEnd::signal: return EndReason::signal;
    case sandbox::RunEnd::timeout: return EndReason::timeout;
    case sandbox::RunEnd::memory_limit: return EndReason::memory_limit;
    case sandbox::RunEnd::cpu_limit: return EndReason::cpu_limit;
    case sandbox::RunEnd::process_limit: return EndReason::process_limit;
    case sandbox::RunEnd::file_size_limit: return EndReason::file_size_limit;
    case sandbox::RunEnd::cancelled: return EndReason::cancelled;
    case sandbox::RunEnd::sandbox_error: return EndReason::sandbox_error;
  }
  return EndReason::exit;
}

UniqueFd script_memfd(const std::string& script) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "script.py", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!fd) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  std::size_t done = 0;
  while (done < script.size()) {
    const ssize_t n = ::write(fd.get(), script.data() + done, script.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("writing the script: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  // Sealed: the run reads exactly what was sent, and nothing can write to it.
  ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  ::lseek(fd.get(), 0, SEEK_SET);  // the offset is shared with the run's copy
  return fd;
}

class Core;

// One execution request from queue to result.
struct Run : std::enable_shared_from_this<Run> {
  Run(asio::io_context& io, std::size_t limit, ResultLimits result_limits)
      : out_capture(limit), err_capture(limit), out_pipe(io), err_pipe(io), result_pipe(io),
        result_decoder(result_limits), deadline(io), answer_timer(io) {}

  enum class Phase { queued, dispatched, finished } phase = Phase::queued;
  std::uint64_t id = 0;
  RunRequest request;
  Engine::DoneFn done;
  Engine::ProgressFn progress;
  std::optional<Interpreter> interpreter;

  OutputCapture out_capture, err_capture;
  asio::posix::stream_descriptor out_pipe, err_pipe;
  std::array<char, kReadChunk> out_buf{}, err_buf{};
  bool out_eof = false, err_eof = false;
  // The runner's value, figures and notes (engine/execution/result_channel.h), read like the output.
  asio::posix::stream_descriptor result_pipe;
  std::array<char, kReadChunk> result_buf{};
  bool result_eof = false;
  ResultDecoder result_decoder;

  // Dependencies (PEP 723 block merged with the parameter), resolved before dispatch.
  std::vector<Requirement> requirements;
  bool validated = false;
  bool env_pending = false;
  std::optional<EnvResult> env;
  std::optional<std::string> install_error;  // install_failed: the installer's decisive lines

  std::shared_ptr<ZygoteProcess> zygote;
  UniqueFd pidfd;
  bool kill_when_started = false;
  std::optional<zygote::ExitedMessage> exited;
  std::optional<std::string> service_error;
  bool refused = false;  // the service error is about the request, not a failure of ours
  bool timed_out = false;
  bool cancelled = false;
  asio::steady_timer deadline;
  asio::steady_timer answer_timer;  // deadline/cancel answer bound, then pipe drain grace
  Clock::time_point dispatched_at;
  Clock::time_point ended_at;
  sandbox::RunCgroup cgroup;
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(asio::io_context& io, EngineConfig config) : io_(io), config_(std::move(config)) {
    if (config_.zygote_path.empty()) config_.zygote_path = default_zygote_path();
    max_concurrent_ = config_.max_concurrent_runs;
    if (max_concurrent_ == 0) max_concurrent_ = 2 * std::max(1u, std::thread::hardware_concurrency());
  }

  ~Core() {
    pool_.join();
    cgroup_pool_.join();
  }

  void start_warmup() {
    warm_ = true;
    ensure_setup();
  }

  std::shared_ptr<Engine::RunHandle> execute(RunRequest request, Engine::ProgressFn progress,
                                             Engine::DoneFn done);
  void cancel(const std::shared_ptr<Run>& run);
  void environment_report(std::function<void(nlohmann::json)> done);
  void shutdown(std::function<void()> done);

 private:
  enum class Setup { not_started, running, done };

  void ensure_setup();
  void start_discovery();
  void after_setup();
  void pump();
  std::shared_ptr<ZygoteProcess> zygote_for(const Interpreter& interpreter, const EnvResult* env = nullptr);
  static std::string zygote_key(const Interpreter& interpreter, const EnvResult* env);
  enum class Validation { ok, refused, wait_for_discovery };
  Validation validate(const std::shared_ptr<Run>& run);
  void resolve_environment(const std::shared_ptr<Run>& run);
  void on_zygote_state(const std::string& key, ZygoteProcess::State state, const std::string& reason);
  void evict_idle_zygotes();
  void dispatch(const std::shared_ptr<Run>& run, const std::shared_ptr<ZygoteProcess>& zygote);
  void read_pipe(const std::shared_ptr<Run>& run, bool is_stdout);
  void read_result(const std::shared_ptr<Run>& run);
  void kill_run(const std::shared_ptr<Run>& run);
  void on_deadline(const std::shared_ptr<Run>& run);
  void maybe_finish(const std::shared_ptr<Run>& run);
  void finish(const std::shared_ptr<Run>& run);
  void fail(const std::shared_ptr<Run>& run, const std::string& message);
  std::string sandbox_label() const;
  std::string native_problem_hint() const;
  // The interpreter for a run; nullopt with `wait` (not known yet) or with `error`.
  std::optional<Interpreter> resolve(const std::optional<std::string>& version, std::string& error,
                                     bool& wait) const;

  asio::io_context& io_;
  EngineConfig config_;
  asio::thread_pool pool_{1};
  // Cgroup removal, in order (runs' cgroups before the server's own), never queued behind a
  // discovery or probe on pool_: shutdown waits for it.
  asio::thread_pool cgroup_pool_{1};
  static constexpr std::chrono::seconds kWarmCacheDelay{10};
  asio::steady_timer warm_timer_{io_};
  // Sweeps for zygotes other than the default's idle past --zygote-idle-seconds.
  asio::steady_timer idle_timer_{io_};
  void schedule_idle_sweep();
  unsigned max_concurrent_ = 4;
  bool warm_ = false;
  bool shutting_down_ = false;
  std::uint64_t next_id_ = 1;

  Setup setup_ = Setup::not_started;
  std::vector<Interpreter> interpreters_;
  std::optional<Interpreter> default_interpreter_;
  std::string discovery_error_;
  std::optional<Interpreter> quick_default_;  // Debian's python3, probed before the discovery
  bool discovery_started_ = false;
  std::string discovery_after_;  // the discovery starts once this zygote is up (or failed)
  // ... and, when runs are already waiting for it, once they are done (or after a while): the
  // discovery's probe processes would otherwise compete with the first run for the CPU.
  bool discovery_when_idle_ = false;
  asio::steady_timer discovery_timer_{io_};
  bool cgroups_ready_ = false;
  sandbox::CgroupSetup cgroups_;
  std::optional<sandbox::ProbeResult> probe_;
  bool probe_running_ = false;
  std::vector<std::function<void()>> probe_waiters_;

  // By interpreter executable, plus the environment (or preloads) for runs with dependencies.
  std::map<std::string, std::shared_ptr<ZygoteProcess>> zygotes_;
  std::map<std::string, std::shared_ptr<EnvLease>> leases_;  // environments in use by zygotes
  std::unique_ptr<Environments> envs_;
  std::deque<std::shared_ptr<Run>> pending_;
  std::set<std::shared_ptr<Run>> active_;
};

class Handle final : public Engine::RunHandle {
 public:
  Handle(std::weak_ptr<Core> core, std::weak_ptr<Run> run) : core_(std::move(core)), run_(std::move(run)) {}
  void cancel() override {
    auto core = core_.lock();
    auto run = run_.lock();
    if (core && run) core->cancel(run);
  }

 private:
  std::weak_ptr<Core> core_;
  std::weak_ptr<Run> run_;
};

std::shared_ptr<Engine::RunHandle> Core::execute(RunRequest request, Engine::ProgressFn progress,
                                                 Engine::DoneFn done) {
  auto run = std::make_shared<Run>(io_, config_.max_output_bytes,
                                   ResultLimits{config_.max_output_bytes, config_.max_images});
  run->id = next_id_++;
  run->request = std::move(request);
  run->progress = std::move(progress);
  run->done = std::move(done);
  auto handle = std::make_shared<Handle>(weak_from_this(), run);
  if (shutting_down_) {
    run->cancelled = true;
    fail(run, "the server is shutting down");
    return handle;
  }
  pending_.push_back(run);
  ensure_setup();
  pump();
  return handle;
}

void Core::ensure_setup() {
  if (setup_ != Setup::not_started) return;
  setup_ = Setup::running;
  std::weak_ptr<Core> weak = weak_from_this();
  const std::string tag = "mpes-" + std::to_string(::getpid());
  const bool want_cgroups = config_.policy.backend != sandbox::Backend::none;
  const bool quick = !config_.python_version || config_.python_version->empty();
  // First, fast: cgroups and, when the default interpreter will do, Debian's python3 alone, so
  // the default zygote starts warming before the full discovery (which probes every
  // interpreter on the host) is done.
  const std::string cache_dir = engine_cache_dir(config_.cache_dir);
  const std::string cache_file = cache_dir.empty() ? "" : cache_dir + "/interpreters.json";
  asio::post(pool_, [this, weak, tag, want_cgroups, quick, cache_file] {
    sandbox::CgroupSetup cgroups;
    if (want_cgroups) cgroups = sandbox::prepare_cgroups(tag);
    std::optional<Interpreter> system;
    const char* candidate = "/usr/bin/python3";
    if (quick && ::access(candidate, X_OK) == 0) {
      // Remembered from an earlier start while the interpreter is unchanged; else probed.
      system = load_cached_interpreter(cache_file, candidate);
      if (!system) {
        std::string error;
        system = probe_interpreter(candidate, &error);
        if (system) store_cached_interpreter(cache_file, candidate, *system);
      }
      if (system && (!system->shared() || system->prefix != system->base_prefix)) system.reset();
    }
    asio::post(io_, [weak, cgroups, system] {
      auto self = weak.lock();
      if (!self) return;
      self->cgroups_ = cgroups;
      self->cgroups_ready_ = true;
      self->quick_default_ = system;
      if (self->warm_ && system && !self->shutting_down_) {
        // The full discovery waits for this zygote: both at once would compete for the CPU.
        self->discovery_after_ = system->executable;
        self->zygote_for(*system);
      } else {
        self->start_discovery();
      }
      self->pump();
    });
  });
}

void Core::start_discovery() {
  if (discovery_started_) return;
  discovery_started_ = true;
  discovery_after_.clear();
  discovery_when_idle_ = false;
  discovery_timer_.cancel();
  std::weak_ptr<Core> weak = weak_from_this();
  DiscoveryOptions options;
  options.uv_path = config_.uv_path;
  asio::post(pool_, [this, weak, options] {
    std::vector<Interpreter> found;
    std::string error;
    try {
      found = discover_interpreters(options);
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io_, [weak, found = std::move(found), error] {
      auto self = weak.lock();
      if (!self) return;
      self->interpreters_ = found;
      self->default_interpreter_ = default_interpreter(found);
      self->discovery_error_ = error;
      self->setup_ = Setup::done;
      self->after_setup();
    });
  });
}

void Core::after_setup() {
  if (shutting_down_) return;
  if (!default_interpreter_) {
    spdlog::error("no CPython >= 3.9 found{}", discovery_error_.empty() ? "" : ": " + discovery_error_);
  } else {
    spdlog::info("default interpreter: Python {} ({})", default_interpreter_->version,
                 default_interpreter_->executable);
  }
  if (warm_) {
    // The server's default zygote (or the --python-version one) warms now (if not already).
    std::string error;
    bool wait = false;
    if (auto in = resolve(std::nullopt, error, wait)) zygote_for(*in);
    schedule_idle_sweep();
    // Cache warming comes last and a while later: the first calls have the CPU to themselves,
    // and a server that lives only seconds (a one-off client, a test) starts no installer.
    if (config_.warm_cache && default_interpreter_) {
      std::weak_ptr<Core> weak = weak_from_this();
      warm_timer_.expires_after(kWarmCacheDelay);
      warm_timer_.async_wait([weak](const std::error_code& ec) {
        auto self = weak.lock();
        if (ec || !self || self->shutting_down_ || !self->default_interpreter_) return;
        if (!self->envs_) self->envs_ = std::make_unique<Environments>(self->io_, environments_config(self->config_));
        self->envs_->warm_cache(*self->default_interpreter_, parse_package_list(profiles::warmup_packages()),
                                [](const std::string& status) { spdlog::info("cache warming {}", status); });
      });
    }
  }
  pump();
}

std::optional<Interpreter> Core::resolve(const std::optional<std::string>& version,
                                         std::string& error, bool& wait) const {
  const std::optional<std::string>& wanted = version ? version : config_.python_version;
  std::optional<Interpreter> in;
  wait = false;
  if (setup_ != Setup::done) {
    // Only the default can be known before the full discovery.
    if ((!wanted || wanted->empty()) && quick_default_) return quick_default_;
    wait = true;
    return std::nullopt;
  }
  if (wanted && !wanted->empty()) {
    in = select_interpreter(interpreters_, *wanted);
    if (!in) {
      error = "Python " + *wanted + " is not available on this host; available: " +
              versions_list(interpreters_);
      return std::nullopt;
    }
  } else {
    in = default_interpreter_;
    if (!in) {
      error = "no CPython >= 3.9 was found on this host (looked on PATH, in pyenv, /usr/bin and "
              "/usr/local/bin" +
              std::string(discovery_error_.empty() ? "" : "; " + discovery_error_) +
              "): install python3 (Debian: apt install python3)";
      return std::nullopt;
    }
  }
  return in;
}

std::string Core::zygote_key(const Interpreter& interpreter, const EnvResult* env) {
  std::string key = interpreter.executable;
  if (env == nullptr) return key;
  if (env->env_root) key += "|env:" + env->env_key;
  for (const auto& name : env->import_names) key += "|" + name;
  return key;
}

std::shared_ptr<ZygoteProcess> Core::zygote_for(const Interpreter& interpreter, const EnvResult* env) {
  const std::string key = zygote_key(interpreter, env);
  auto it = zygotes_.find(key);
  if (it != zygotes_.end() && it->second->state() != ZygoteProcess::State::failed &&
      it->second->state() != ZygoteProcess::State::stopped) {
    return it->second;
  }
  evict_idle_zygotes();
  ZygoteLaunch launch;
  launch.interpreter = interpreter;
  launch.policy = config_.policy;
  launch.zygote_path = config_.zygote_path;
  launch.bwrap_path = config_.policy.backend == sandbox::Backend::native ? sandbox::find_bwrap() : "";
  launch.preload = config_.preload_modules;
  if (env != nullptr) {
    // The environment's zygote: its site dir first on sys.path, mounted read-only, and what
    // its distributions provide imported ahead (a failing import is logged and skipped).
    for (const auto& name : env->import_names) {
      if (std::find(launch.preload.begin(), launch.preload.end(), name) == launch.preload.end()) {
        launch.preload.push_back(name);
      }
    }
    if (env->env_root) launch.env_root = *env->env_root;
    if (env->lease) leases_[key] = env->lease;
  }
  launch.max_value_bytes = config_.max_output_bytes;
  launch.max_images = config_.max_images;
  launch.rlimit_fallbacks.memory = !cgroups_.limits_memory();
  launch.rlimit_fallbacks.processes = !cgroups_.limits_processes();
  auto zygote = std::make_shared<ZygoteProcess>(io_, std::move(launch));
  zygotes_[key] = zygote;
  std::weak_ptr<Core> weak = weak_from_this();
  zygote->start([weak, key](ZygoteProcess::State state, const std::string& reason) {
    if (auto self = weak.lock()) self->on_zygote_state(key, state, reason);
  });
  return zygote;
}

// Zygotes idle past --zygote-idle-seconds give their memory back (the default's stays); the sweep
// runs every minute, or twice per idle period when that is shorter.
void Core::schedule_idle_sweep() {
  std::weak_ptr<Core> weak = weak_from_this();
  const auto half_idle = std::chrono::milliseconds(std::chrono::seconds(config_.zygote_idle_seconds)) / 2;
  idle_timer_.expires_after(std::clamp<std::chrono::milliseconds>(half_idle, std::chrono::milliseconds(500),
                                                                  std::chrono::minutes(1)));
  idle_timer_.async_wait([weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->shutting_down_) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = self->zygotes_.begin(); it != self->zygotes_.end();) {
      const bool is_default =
          (self->default_interpreter_ && self->default_interpreter_->executable == it->first) ||
          (self->quick_default_ && self->quick_default_->executable == it->first);
      const auto& z = *it->second;
      if (!is_default && z.runs_in_flight() == 0 && z.state() == ZygoteProcess::State::ready &&
          now - z.last_used() > std::chrono::seconds(self->config_.zygote_idle_seconds)) {
        spdlog::info("stopping the zygote for {}: idle for {} s", it->first, self->config_.zygote_idle_seconds);
        it->second->stop();
        self->leases_.erase(it->first);
        it = self->zygotes_.erase(it);
      } else {
        ++it;
      }
    }
    self->schedule_idle_sweep();
  });
}

// --max-zygotes bounds the warm zygotes: before starting another, the least recently used idle
// one (never the default's) is stopped.
void Core::evict_idle_zygotes() {
  const std::size_t bound = std::max(1u, config_.max_zygotes);
  while (zygotes_.size() >= bound) {
    auto victim = zygotes_.end();
    for (auto it = zygotes_.begin(); it != zygotes_.end(); ++it) {
      const bool is_default = (default_interpreter_ && default_interpreter_->executable == it->first) ||
                              (quick_default_ && quick_default_->executable == it->first);
      if (is_default || it->second->runs_in_flight() > 0 ||
          it->second->state() == ZygoteProcess::State::starting) {
        continue;
      }
      if (victim == zygotes_.end() || it->second->last_used() < victim->second->last_used()) victim = it;
    }
    if (victim == zygotes_.end()) return;  // all busy: run over the bound rather than wait
    spdlog::info("stopping the idle zygote for {} (--max-zygotes {})", victim->first, bound);
    victim->second->stop();
    leases_.erase(victim->first);  // its environment may be evicted from the store again
    zygotes_.erase(victim);
  }
}

void Core::on_zygote_state(const std::string& key, ZygoteProcess::State state, const std::string& reason) {
  if (!discovery_started_ && key == discovery_after_) {
    if (state == ZygoteProcess::State::ready && (!pending_.empty() || !active_.empty())) {
      discovery_when_idle_ = true;
      std::weak_ptr<Core> weak = weak_from_this();
      discovery_timer_.expires_after(kDiscoveryDeferredAtMost);
      discovery_timer_.async_wait([weak](const std::error_code& ec) {
        auto self = weak.lock();
        if (!ec && self && !self->shutting_down_) self->start_discovery();
      });
    } else {
      start_discovery();
    }
  }
  if (state == ZygoteProcess::State::failed) {
    spdlog::error("{}", reason);
    pump();  // fails the runs waiting for it
    auto it = zygotes_.find(key);
    if (it != zygotes_.end() && it->second->state() == ZygoteProcess::State::failed) {
      const bool was_ready = it->second->python_version().size() > 0;
      zygotes_.erase(it);
      leases_.erase(key);
      // A zygote lost after warm-up is replaced at once (a start failure waits for the next call).
      if (was_ready && !shutting_down_) {
        for (const auto& in : interpreters_) {
          if (in.executable == key) zygote_for(in);
        }
      }
    }
    return;
  }
  pump();
}

// The script's PEP 723 block and the dependencies parameter, against the interpreter that will
// run it. An invalid block or an unsatisfied requires-python refuses the run (isError).
Core::Validation Core::validate(const std::shared_ptr<Run>& run) {
  MarkerEnvironment markers = run->interpreter->markers;
  if (markers.python_full_version.empty()) {
    markers.python_version = run->interpreter->major_minor;
    markers.python_full_version = run->interpreter->version;
  }
  const auto validation = validate_script(run->request.script, run->request.dependencies, markers);
  if (!validation.valid) {
    if (validation.requires_python && setup_ != Setup::done) {
      // The refusal lists the versions that are available: wait until all of them are known.
      start_discovery();
      return Validation::wait_for_discovery;
    }
    std::string message;
    for (const auto& e : validation.errors) message += (message.empty() ? "" : "; ") + e;
    if (validation.requires_python) {
      message += " (Python versions available: " + versions_list(interpreters_) +
                 "; choose one with the python_version argument)";
    }
    run->refused = true;
    fail(run, "the script cannot run: " + message);
    return Validation::refused;
  }
  run->requirements = validation.dependencies;
  return Validation::ok;
}

void Core::resolve_environment(const std::shared_ptr<Run>& run) {
  run->env_pending = true;
  if (!envs_) envs_ = std::make_unique<Environments>(io_, environments_config(config_));
  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Run> weak_run = run;
  // Progress for callers with a progress token: one step per installer stage.
  auto step = std::make_shared<double>(0);
  Environments::ProgressFn progress;
  if (run->progress) {
    progress = [weak_run, step](const std::string& stage, const std::string& message) {
      auto r = weak_run.lock();
      if (!r || r->phase == Run::Phase::finished || !r->progress) return;
      *step += 1;
      r->progress(*step, std::nullopt, stage + (message.empty() ? "" : ": " + message));
    };
  }
  envs_->ensure(*run->interpreter, run->requirements, std::move(progress), [weak, weak_run](EnvResult result) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!self || !r || r->phase != Run::Phase::queued) return;
    r->env_pending = false;
    switch (result.status) {
      case EnvResult::Status::ready:
        r->env = std::move(result);
        break;
      case EnvResult::Status::install_failed:
        r->install_error = result.error;
        r->env = std::move(result);
        break;
      case EnvResult::Status::error:
        self->pending_.erase(std::remove(self->pending_.begin(), self->pending_.end(), r), self->pending_.end());
        self->fail(r, result.error);
        return;
    }
    self->pump();
  });
}

void Core::pump() {
  if (shutting_down_ || !cgroups_ready_) return;
  for (auto it = pending_.begin(); it != pending_.end() && active_.size() < max_concurrent_;) {
    auto run = *it;
    if (!run->interpreter) {
      std::string error;
      bool wait = false;
      run->interpreter = resolve(run->request.python_version, error, wait);
      if (wait) {
        start_discovery();
        ++it;
        continue;
      }
      if (!run->interpreter) {
        it = pending_.erase(it);
        // The call's own python_version is refused; no interpreter at all is the host's problem.
        run->refused = run->request.python_version && !run->request.python_version->empty();
        fail(run, error);
        continue;
      }
    }
    if (!run->validated) {
      const auto validation = validate(run);
      if (validation == Validation::wait_for_discovery) {
        ++it;
        continue;
      }
      run->validated = true;
      if (validation == Validation::refused) {
        it = pending_.erase(it);
        continue;
      }
    }
    if (!run->requirements.empty() && !run->env) {
      // Resolved off the queue's slots: installs can take minutes, runs keep flowing.
      if (!run->env_pending) resolve_environment(run);
      ++it;
      continue;
    }
    if (run->install_error) {
      it = pending_.erase(it);
      finish(run);
      continue;
    }
    const EnvResult* env = run->env && (run->env->env_root || !run->env->import_names.empty())
                               ? &*run->env
                               : nullptr;
    // A zygote that failed fails the runs waiting for it (on_zygote_state then forgets it, so
    // a later run tries again) rather than being restarted in a loop here.
    auto existing = zygotes_.find(zygote_key(*run->interpreter, env));
    auto zygote = existing != zygotes_.end() ? existing->second : zygote_for(*run->interpreter, env);
    switch (zygote->state()) {
      case ZygoteProcess::State::ready:
        it = pending_.erase(it);
        dispatch(run, zygote);
        break;
      case ZygoteProcess::State::starting:
        ++it;
        break;
      case ZygoteProcess::State::failed:
      case ZygoteProcess::State::stopped: {
        it = pending_.erase(it);
        std::string message = zygote->failure();
        if (config_.policy.backend == sandbox::Backend::native) message += native_problem_hint();
        fail(run, message);
        break;
      }
    }
  }
}

std::string Core::native_problem_hint() const {
  if (probe_ && !probe_->native_ready()) {
    return ". Sandbox problem: " + probe_->problem + (probe_->fix.empty() ? "" : ". Fix: " + probe_->fix);
  }
  return ". If user namespaces are restricted (Ubuntu >= 23.10), allow them for bwrap: "
         "sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile "
         "for bwrap); or run with --sandbox-backend none to execute unsandboxed";
}

std::string Core::sandbox_label() const {
  switch (config_.policy.backend) {
    case sandbox::Backend::native: return "native";
    case sandbox::Backend::none: return "none (unsandboxed)";
    case sandbox::Backend::docker: return "docker";
  }
  return "native";
}

void Core::dispatch(const std::shared_ptr<Run>& run, const std::shared_ptr<ZygoteProcess>& zygote) {
  run->phase = Run::Phase::dispatched;
  run->zygote = zygote;
  active_.insert(run);
  run->dispatched_at = Clock::now();

  UniqueFd script, out_rd, out_wr, err_rd, err_wr, result_rd, result_wr;
  std::vector<int> extra;
  sandbox::JoinFds join;
  try {
    script = script_memfd(run->request.script);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    out_rd.reset(p[0]);
    out_wr.reset(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    err_rd.reset(p[0]);
    err_wr.reset(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    result_rd.reset(p[0]);
    result_wr.reset(p[1]);
    if (cgroups_.limits_memory() || cgroups_.limits_processes()) {
      run->cgroup = sandbox::RunCgroup::create(cgroups_, "run-" + std::to_string(run->id),
                                               config_.policy.limits);
      join = run->cgroup.open_join_fds();
    }
  } catch (const std::exception& e) {
    fail(run, std::string("cannot prepare the run: ") + e.what());
    return;
  }
  std::vector<int> fds = {script.get(), out_wr.get(), err_wr.get(), result_wr.get()};
  for (int fd : join.fds()) fds.push_back(fd);

  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Run> weak_run = run;
  ZygoteProcess::RunCallbacks callbacks;
  callbacks.started = [weak_run](pid_t, UniqueFd pidfd) {
    auto r = weak_run.lock();
    if (!r || r->phase == Run::Phase::finished) return;
    r->pidfd = std::move(pidfd);
    if (r->kill_when_started && r->pidfd) ::syscall(SYS_pidfd_send_signal, r->pidfd.get(), SIGKILL, nullptr, 0);
  };
  callbacks.exited = [weak, weak_run](const zygote::ExitedMessage& exited) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!self || !r || r->phase == Run::Phase::finished) return;
    r->exited = exited;
    r->ended_at = Clock::now();
    self->maybe_finish(r);
  };
  callbacks.failed = [weak, weak_run](const std::string& reason) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!self || !r || r->phase == Run::Phase::finished) return;
    self->fail(r, reason);
  };
  const auto timeout = static_cast<std::uint32_t>(std::max(1, run->request.timeout_seconds));
  if (!zygote->run(run->id, timeout, fds, std::move(callbacks))) {
    fail(run, "the zygote is not ready: " + zygote->failure());
    return;
  }
  out_wr.reset();  // the run holds the only write ends now: EOF means the run is done with them
  err_wr.reset();
  result_wr.reset();
  run->out_pipe.assign(out_rd.release());
  run->err_pipe.assign(err_rd.release());
  run->result_pipe.assign(result_rd.release());
  run->out_pipe.non_blocking(true);
  run->err_pipe.non_blocking(true);
  run->result_pipe.non_blocking(true);
  read_pipe(run, true);
  read_pipe(run, false);
  read_result(run);

  run->deadline.expires_after(std::chrono::seconds(timeout));
  run->deadline.async_wait([weak, weak_run](const std::error_code& ec) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (ec || !self || !r) return;
    self->on_deadline(r);
  });
}

void Core::read_pipe(const std::shared_ptr<Run>& run, bool is_stdout) {
  auto& pipe = is_stdout ? run->out_pipe : run->err_pipe;
  auto& buf = is_stdout ? run->out_buf : run->err_buf;
  std::weak_ptr<Core> weak = weak_from_this();
  pipe.async_read_some(asio::buffer(buf), [weak, run, is_stdout](const std::error_code& ec, std::size_t n) {
    auto self = weak.lock();
    if (!self || run->phase == Run::Phase::finished) return;
    auto& capture = is_stdout ? run->out_capture : run->err_capture;
    if (n > 0) capture.append(std::string_view((is_stdout ? run->out_buf : run->err_buf).data(), n));
    if (ec) {
      (is_stdout ? run->out_eof : run->err_eof) = true;
      self->maybe_finish(run);
      return;
    }
    self->read_pipe(run, is_stdout);
  });
}

void Core::read_result(const std::shared_ptr<Run>& run) {
  std::weak_ptr<Core> weak = weak_from_this();
  run->result_pipe.async_read_some(asio::buffer(run->result_buf), [weak, run](const std::error_code& ec, std::size_t n) {
    auto self = weak.lock();
    if (!self || run->phase == Run::Phase::finished) return;
    if (n > 0) run->result_decoder.append(std::string_view(run->result_buf.data(), n));
    if (ec) {
      run->result_eof = true;
      self->maybe_finish(run);
      return;
    }
    self->read_result(run);
  });
}

void Core::kill_run(const std::shared_ptr<Run>& run) {
  if (run->pidfd) {
    ::syscall(SYS_pidfd_send_signal, run->pidfd.get(), SIGKILL, nullptr, 0);
  } else {
    run->kill_when_started = true;
  }
}

void Core::on_deadline(const std::shared_ptr<Run>& run) {
  if (run->phase != Run::Phase::dispatched || run->exited) return;
  run->timed_out = true;
  run->ended_at = Clock::now();
  kill_run(run);
  // Answer promptly even if the zygote does not report the exit in time.
  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Run> weak_run = run;
  run->answer_timer.expires_after(kKillAnswerWithin);
  run->answer_timer.async_wait([weak, weak_run](const std::error_code& ec) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!ec && self && r) self->finish(r);
  });
}

void Core::cancel(const std::shared_ptr<Run>& run) {
  if (run->phase == Run::Phase::finished) return;
  run->cancelled = true;
  if (run->phase == Run::Phase::queued) {
    pending_.erase(std::remove(pending_.begin(), pending_.end(), run), pending_.end());
    finish(run);
    return;
  }
  if (run->exited) return;  // already over; its result stands
  run->ended_at = Clock::now();
  kill_run(run);
  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Run> weak_run = run;
  run->answer_timer.expires_after(kKillAnswerWithin);
  run->answer_timer.async_wait([weak, weak_run](const std::error_code& ec) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!ec && self && r) self->finish(r);
  });
}

void Core::maybe_finish(const std::shared_ptr<Run>& run) {
  if (run->phase != Run::Phase::dispatched || !run->exited) return;
  if (run->out_eof && run->err_eof && run->result_eof) {
    finish(run);
    return;
  }
  if (run->timed_out || run->cancelled) return;  // the answer timer is already running
  // The run's process is gone but something still holds its pipes: drain briefly, then answer.
  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Run> weak_run = run;
  run->answer_timer.expires_after(kPipeDrainGrace);
  run->answer_timer.async_wait([weak, weak_run](const std::error_code& ec) {
    auto self = weak.lock();
    auto r = weak_run.lock();
    if (!ec && self && r) self->finish(r);
  });
}

void Core::fail(const std::shared_ptr<Run>& run, const std::string& message) {
  if (run->phase == Run::Phase::finished) return;
  run->service_error = message;
  if (run->phase == Run::Phase::dispatched) kill_run(run);
  finish(run);
}

void Core::finish(const std::shared_ptr<Run>& run) {
  if (run->phase == Run::Phase::finished) return;
  const bool was_dispatched = run->phase == Run::Phase::dispatched;
  run->phase = Run::Phase::finished;
  run->deadline.cancel();
  run->answer_timer.cancel();
  // Whatever is still readable now belongs to the run (cheap: non-blocking reads).
  const auto drain = [](asio::posix::stream_descriptor& pipe, const auto& append) {
    if (!pipe.is_open()) return;
    char buf[16384];
    for (int i = 0; i < 64; ++i) {
      const ssize_t n = ::read(pipe.native_handle(), buf, sizeof buf);
      if (n <= 0) break;
      append(std::string_view(buf, static_cast<std::size_t>(n)));
    }
    std::error_code ignored;
    pipe.close(ignored);
  };
  drain(run->out_pipe, [&](std::string_view bytes) { run->out_capture.append(bytes); });
  drain(run->err_pipe, [&](std::string_view bytes) { run->err_capture.append(bytes); });
  drain(run->result_pipe, [&](std::string_view bytes) { run->result_decoder.append(bytes); });
  active_.erase(run);
  if (discovery_when_idle_ && active_.empty() && pending_.empty()) start_discovery();

  RunResult result;
  result.stdout_stream = run->out_capture.finish();
  result.stderr_stream = run->err_capture.finish();
  result.sandbox = sandbox_label();
  // A static interpreter (no shared libpython) cannot be embedded: a fresh one runs each script.
  result.execution_path = run->interpreter && !run->interpreter->shared() ? "spawn" : "zygote";
  if (run->interpreter) result.python_version = run->interpreter->version;
  if (run->zygote && !run->zygote->python_version().empty()) result.python_version = run->zygote->python_version();
  const auto end = run->exited ? run->ended_at
                   : (run->timed_out || run->cancelled) && run->ended_at != Clock::time_point{} ? run->ended_at
                                                                                                : Clock::now();
  if (was_dispatched) {
    result.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - run->dispatched_at).count();
  }
  result.usage.wall_ms = result.duration_ms;

  sandbox::EndEvidence evidence;
  evidence.timed_out = run->timed_out;
  evidence.cancelled = run->cancelled;
  std::optional<sandbox::CgroupStats> stats;
  if (!run->cgroup.empty()) {
    stats = run->cgroup.read_stats();
    evidence.cgroup = stats;
  }
  if (run->exited) {
    const auto& ex = *run->exited;
    evidence.wait_status = ex.wait_status;
    result.usage.cpu_ms = (ex.user_cpu_us + ex.system_cpu_us) / 1000;
    evidence.cpu_time_ms = result.usage.cpu_ms;
    result.usage.peak_memory_bytes = ex.max_rss_kb * 1024;
    if ((ex.flags & zygote::kExitSetupFailed) != 0 && !run->service_error) {
      run->service_error = "sandbox setup failed: " + ex.detail;
    }
  }
  if (stats && stats->memory_peak_bytes > 0) result.usage.peak_memory_bytes = stats->memory_peak_bytes;
  // The cgroup counts every process of the run, also those killed rather than reaped, and not
  // the run child's preparation before it joined (which its rusage includes).
  if (stats && stats->cpu_usage_us >= 0) result.usage.cpu_ms = stats->cpu_usage_us / 1000;
  evidence.cpu_limit_seconds = config_.policy.limits.cpu_seconds != 0
                                   ? config_.policy.limits.cpu_seconds
                                   : static_cast<std::uint32_t>(std::max(1, run->request.timeout_seconds));
  evidence.uncaught_exception = sandbox::uncaught_exception_from_stderr(result.stderr_stream.text);
  evidence.sandbox_failed = run->service_error.has_value();

  if (run->install_error && !run->service_error) {
    // Not a service failure: the requirements cannot be installed (as `uv run` would report).
    result.exit_code = 1;
    result.end_reason = EndReason::install_failed;
    result.stderr_stream = OutputCapture::capture(*run->install_error, config_.max_output_bytes);
  } else if (run->service_error) {
    result.service_error = run->service_error;
    result.exit_code = -1;
    result.end_reason = run->cancelled ? EndReason::cancelled
                        : run->refused ? EndReason::refused
                                       : EndReason::sandbox_error;
  } else if (run->timed_out) {
    result.exit_code = -9;
    result.timed_out = true;
    result.end_reason = EndReason::timeout;
  } else if (run->cancelled && !run->exited) {
    result.exit_code = -9;
    result.end_reason = EndReason::cancelled;
  } else if (run->exited) {
    const int status = run->exited->wait_status;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    result.end_reason = to_end_reason(sandbox::classify_end(evidence));
    // What the runner reported, when its channel holds a complete, valid result (else nothing:
    // a script can write to or close that fd, never make the run fail).
    RunnerResult rich = run->result_decoder.finish();
    if (run->result_decoder.failed()) {
      spdlog::debug("run {}: no value or figures: result channel {}", run->id, run->result_decoder.error());
    }
    result.return_value_repr = std::move(rich.value_repr);
    result.return_value_json = std::move(rich.value_json);
    result.images = std::move(rich.images);
    result.notes = std::move(rich.notes);
  } else {
    result.exit_code = -1;
    result.end_reason = EndReason::sandbox_error;
  }

  if (!run->cgroup.empty()) {
    // rmdir can wait briefly for the kernel to let go of the run's processes: off the loop.
    auto cgroup = std::make_shared<sandbox::RunCgroup>(std::move(run->cgroup));
    asio::post(cgroup_pool_, [cgroup] { cgroup->remove(); });
  }
  run->pidfd.reset();
  run->zygote.reset();
  if (run->done) {
    // Posted: the caller may start new runs from its callback while we are in the middle of ours.
    asio::post(io_, [done = std::move(run->done), result = std::move(result)]() mutable { done(std::move(result)); });
  }
  if (was_dispatched) {
    std::weak_ptr<Core> weak = weak_from_this();
    asio::post(io_, [weak] {
      if (auto self = weak.lock()) self->pump();
    });
  }
}

void Core::environment_report(std::function<void(nlohmann::json)> done) {
  auto build = [this, done = std::move(done)] {
    nlohmann::json report;
    report["backend"] = sandbox_label();
    report["network"] = config_.policy.network ? "on" : "off";
    report["execution_path"] =
        default_interpreter_ && !default_interpreter_->shared() ? "spawn (static interpreter)" : "zygote";
    report["max_concurrent_runs"] = max_concurrent_;
    report["runs_in_flight"] = active_.size();
    report["runs_queued"] = pending_.size();
    const auto& l = config_.policy.limits;
    report["limits"] = {{"memory_bytes", l.memory_bytes},       {"max_processes", l.max_processes},
                        {"tmpfs_bytes", l.tmpfs_bytes},         {"cpu_seconds", l.cpu_seconds},
                        {"file_size_bytes", l.file_size_bytes}, {"open_files", l.open_files}};
    report["preload"] = config_.preload_modules;
    if (default_interpreter_) {
      const auto& in = *default_interpreter_;
      report["interpreter"] = {{"version", in.version}, {"executable", in.executable},
                               {"prefix", in.prefix}, {"libpython", in.libpython}, {"source", in.source}};
    }
    nlohmann::json interpreters = nlohmann::json::array();
    for (const auto& in : interpreters_) {
      auto it = zygotes_.find(in.executable);
      const bool warm = it != zygotes_.end() && it->second->state() == ZygoteProcess::State::ready;
      interpreters.push_back({{"version", in.version}, {"executable", in.executable},
                              {"source", in.source}, {"shared", in.shared()},
                              {"execution_path", in.shared() ? "zygote" : "spawn"},
                              {"libpython", in.libpython}, {"warm", warm},
                              {"default", default_interpreter_ && default_interpreter_->executable == in.executable}});
    }
    report["interpreters"] = interpreters;
    if (!discovery_error_.empty()) report["discovery_error"] = discovery_error_;
    nlohmann::json zygotes = nlohmann::json::array();
    for (const auto& [key, z] : zygotes_) {
      nlohmann::json entry = {{"interpreter", key}, {"python_version", z->python_version()},
                              {"state", to_string(z->state())}, {"rss_bytes", z->rss_bytes()},
                              {"runs_in_flight", z->runs_in_flight()}};
      if (!z->failure().empty()) entry["failure"] = z->failure();
      if (!z->warnings().empty()) entry["warnings"] = z->warnings();
      zygotes.push_back(entry);
    }
    report["zygotes"] = zygotes;
    report["cgroups"] = {{"mode", cgroups_.describe()},
                         {"memory", cgroups_.limits_memory() ? cgroups_.memory_mechanism() : "RLIMIT_DATA"},
                         {"processes", cgroups_.limits_processes() ? cgroups_.process_mechanism() : "RLIMIT_NPROC"}};
    if (!cgroups_.note.empty()) report["cgroups"]["note"] = cgroups_.note;
    if (probe_) {
      const auto& p = *probe_;
      nlohmann::json probe = {{"bwrap_path", p.bwrap_path},
                              {"bwrap_version", p.bwrap_version},
                              {"userns_works", p.userns_works},
                              {"seccomp_available", p.seccomp_available},
                              {"cgroup_mode", p.cgroup_mode},
                              {"memory_limit_mechanism", p.memory_limit_mechanism},
                              {"process_limit_mechanism", p.process_limit_mechanism},
                              {"file_size_limit_mechanism", p.file_size_limit_mechanism},
                              {"cpu_limit_mechanism", p.cpu_limit_mechanism},
                              {"native_ready", p.native_ready()},
                              {"problem", p.problem},
                              {"fix", p.fix}};
      nlohmann::json details = nlohmann::json::object();
      for (const auto& [k, v] : p.details) details[k] = v;
      probe["details"] = details;
      report["probe"] = probe;
      if (config_.policy.backend == sandbox::Backend::native) {
        report["sandbox_status"] = p.native_ready() ? "ready" : "unavailable: " + p.problem;
      }
    }
    if (config_.policy.backend == sandbox::Backend::none) {
      report["sandbox_status"] = "disabled (--sandbox-backend none): runs are not isolated";
    }
    if (!envs_) envs_ = std::make_unique<Environments>(io_, environments_config(config_));
    envs_->report([report, done, warm = config_.warm_cache](nlohmann::json environments) mutable {
      if (!warm) environments["cache_warming"] = "disabled (--no-warm-cache)";
      report["environments"] = std::move(environments);
      done(std::move(report));
    });
  };
  // The probe runs bwrap once: off the loop, once, cached; setup first (cgroups, interpreters).
  probe_waiters_.push_back(std::move(build));
  if (probe_ && setup_ == Setup::done) {
    auto waiters = std::move(probe_waiters_);
    probe_waiters_.clear();
    for (auto& w : waiters) asio::post(io_, std::move(w));
    return;
  }
  if (probe_running_) return;
  probe_running_ = true;
  ensure_setup();
  start_discovery();
  std::weak_ptr<Core> weak = weak_from_this();
  const auto policy = config_.policy;
  asio::post(pool_, [this, weak, policy] {
    sandbox::ProbeResult probe = sandbox::probe_host(policy);
    asio::post(io_, [weak, probe = std::move(probe)] {
      auto self = weak.lock();
      if (!self) return;
      self->probe_ = probe;
      self->probe_running_ = false;
      auto flush = [weak] {
        auto s = weak.lock();
        if (!s || s->setup_ != Setup::done) return;
        auto waiters = std::move(s->probe_waiters_);
        s->probe_waiters_.clear();
        for (auto& w : waiters) w();
      };
      if (self->setup_ == Setup::done) {
        flush();
      } else {
        // Setup posts after_setup; flush the report after it.
        asio::post(self->io_, flush);
      }
    });
  });
}

void Core::shutdown(std::function<void()> done) {
  if (shutting_down_) {
    asio::post(io_, std::move(done));
    return;
  }
  shutting_down_ = true;
  warm_timer_.cancel();
  idle_timer_.cancel();
  discovery_timer_.cancel();
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& run : pending) {
    run->cancelled = true;
    finish(run);
  }
  auto active = active_;
  for (const auto& run : active) {
    run->cancelled = true;
    kill_run(run);
    finish(run);
  }
  // Every zygote is reaped before `done` (bounded: stop() escalates to SIGKILL after a second).
  auto remaining = std::make_shared<std::size_t>(zygotes_.size() + 1);
  auto once = std::make_shared<std::function<void()>>(std::move(done));
  auto step = [remaining, once, this] {
    if (--*remaining == 0 && *once) {
      auto d = std::move(*once);
      *once = nullptr;
      if (cgroups_.version == sandbox::CgroupVersion::none) {
        d();
        return;
      }
      // After the runs' cgroups (removed on the pool, in order), the server's own.
      asio::post(cgroup_pool_, [this, cgroups = cgroups_, d = std::move(d)]() mutable {
        sandbox::release_cgroups(cgroups);
        asio::post(io_, std::move(d));
      });
    }
  };
  for (auto& [key, zygote] : zygotes_) zygote->stop(step);
  zygotes_.clear();
  leases_.clear();
  if (envs_) {
    ++*remaining;
    envs_->shutdown(step);  // kills running installers
  }
  step();
}

class EngineImpl final : public Engine {
 public:
  EngineImpl(asio::io_context& io, EngineConfig config)
      : core_(std::make_shared<Core>(io, std::move(config))) {}

  void start_warmup() override { core_->start_warmup(); }
  std::shared_ptr<RunHandle> execute(RunRequest request, ProgressFn progress, DoneFn done) override {
    return core_->execute(std::move(request), std::move(progress), std::move(done));
  }
  void environment_report(std::function<void(nlohmann::json)> done) override {
    core_->environment_report(std::move(done));
  }
  void shutdown(std::function<void()> done) override { core_->shutdown(std::move(done)); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(asio::io_context& io, EngineConfig config) {
  return std::make_unique<EngineImpl>(io, std::move(config));
}

}  // namespace engine
