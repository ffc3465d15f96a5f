#include "engine/environments/environments.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <asio/post.hpp>
#include <asio/thread_pool.hpp>
#include <spdlog/spdlog.h>

#include "engine/environments/installer_config.h"
#include "engine/environments/record_check.h"
#include "engine/environments/requirement_check.h"
#include "sandbox/path_search.h"
#include "sandbox/process.h"

namespace engine {

namespace fs = std::filesystem;

std::vector<std::string> parse_package_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (!line.empty()) out.emplace_back(line);
  }
  return out;
}

namespace {

// The installer failed because of the requirements (not because of the host).
struct InstallFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the installer's output line means for the user, or "" when it is noise.
std::string progress_stage(std::string_view line) {
  auto has = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
  if (has("Collecting ") || has("Processing ") || has("Resolved ") || has("Looking in")) return "resolving";
  if (has("Downloading ") || has("Downloaded ") || has("Prepared ") || has("Building ")) return "downloading";
  if (has("Installing ") || has("Installed ") || has("Successfully installed")) return "installing";
  return {};
}

// A stamp that changes when a package is added to or removed from the interpreter's
// site-packages (each install or removal touches the directory).
std::string site_stamp(const Interpreter& interp) {
  std::string stamp;
  for (const auto& dir : interp.site_packages) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) == 0) {
      stamp += dir + ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
    }
  }
  return stamp;
}

std::vector<std::string> merge_names(std::vector<std::string> a, const std::vector<std::string>& b) {
  for (const auto& n : b) {
    if (std::find(a.begin(), a.end(), n) == a.end()) a.push_back(n);
  }
  return a;
}

}  // namespace

struct Environments::Impl : std::enable_shared_from_this<Environments::Impl> {
  struct Waiter {
    std::uint64_t ticket = 0;
    ProgressFn progress;
    DoneFn done;
  };
  // The calls waiting for one request set, and which job serves them (a job abandoned by all
  // its callers delivers nothing, even when a new job for the same set has started since).
  struct Pending {
    std::uint64_t job = 0;
    std::vector<Waiter> waiters;
  };
  struct CachedCheck {
    std::string stamp;
    RequirementCheck check;
  };

  asio::io_context& io;
  EnvironmentsConfig config;
  EnvironmentStore store;
  asio::thread_pool pool;
  std::atomic<bool> stopped{false};
  std::atomic<std::uint64_t> installer_runs{0};

  // io thread only.
  std::map<std::string, Pending> pending;
  std::uint64_t next_ticket = 1;
  std::uint64_t next_job = 1;
  std::string warm_state = "not started";

  std::mutex mutex;  // guards everything below (worker threads)
  bool store_open = false;
  std::string store_error;
  std::map<std::string, CachedCheck> checks;
  std::set<std::shared_ptr<sandbox::KillSwitch>> running;
  std::map<std::uint64_t, std::shared_ptr<sandbox::KillSwitch>> running_jobs;  // job -> its install
  std::set<std::uint64_t> abandoned_jobs;
  std::atomic<std::uint64_t> install_count{0};
  std::string uv_version_stamp, uv_version_text;

  Impl(asio::io_context& io_context, EnvironmentsConfig c)
      : io(io_context),
        config(std::move(c)),
        store(config.cache_dir, config.max_bytes),
        pool(std::max(1u, config.worker_threads)) {
    config.installer.index.user_configuration = deps::installer_configuration_digest(deps::process_environment());
  }

  void open_store() {
    std::lock_guard lock(mutex);
    if (store_open) return;
    store.open();  // throws StoreError; retried by the next call
    store_open = true;
  }

  RequirementCheck cached_check(const std::string& key, const Interpreter& interp,
                                const std::vector<Requirement>& reqs) {
    const std::string stamp = site_stamp(interp);
    {
      std::lock_guard lock(mutex);
      auto it = checks.find(key);
      if (it != checks.end() && it->second.stamp == stamp) return it->second.check;
    }
    RequirementCheck check = check_requirements(interp, reqs, {}, config.installer.container);
    std::lock_guard lock(mutex);
    checks[key] = {stamp, check};
    return check;
  }

  void progress(const std::string& key, std::uint64_t job, std::string stage, std::string message) {
    asio::post(io, [self = shared_from_this(), key, job, stage = std::move(stage),
                    message = std::move(message)] {
      auto it = self->pending.find(key);
      if (it == self->pending.end() || it->second.job != job) return;
      for (auto& w : it->second.waiters) {
        if (w.progress) w.progress(stage, message);
      }
    });
  }

  void deliver(const std::string& key, std::uint64_t job, EnvResult result) {
    asio::post(io, [self = shared_from_this(), key, job, result = std::move(result)] {
      auto it = self->pending.find(key);
      if (it == self->pending.end() || it->second.job != job) return;
      auto waiters = std::move(it->second.waiters);
      self->pending.erase(it);
      for (auto& w : waiters) w.done(result);
    });
  }

  deps::InstallOutcome install(std::uint64_t job, const Interpreter& interp,
                               const std::vector<std::string>& reqs, const std::string& target,
                               bool has_pip, const std::function<void(std::string_view)>& on_line) {
    auto who = deps::installer_identity(config.installer);
    if (who.dropped && ::chown(target.c_str(), who.uid, who.gid) != 0) {
      throw StoreError("cannot hand " + target + " to the installer's uid " + std::to_string(who.uid));
    }
    auto ks = std::make_shared<sandbox::KillSwitch>();
    {
      std::lock_guard lock(mutex);
      if (stopped) throw std::runtime_error("the server is shutting down");
      running.insert(ks);
      if (job != 0) running_jobs[job] = ks;
      if (abandoned_jobs.count(job) != 0) ks->kill();  // abandoned before it started
    }
    struct Unregister {
      Impl* impl;
      std::uint64_t job;
      std::shared_ptr<sandbox::KillSwitch> ks;
      ~Unregister() {
        std::lock_guard lock(impl->mutex);
        impl->running.erase(ks);
        impl->running_jobs.erase(job);
      }
    } unregister{this, job, ks};
    // Its own control group, as a run has: memory and processes of the whole tree bounded and
    // counted, and whatever it leaves behind killed with it.
    const sandbox::Limits& limits = config.installer.limits;
    sandbox::RunCgroup cgroup;
    sandbox::JoinFds join;
    if (config.installer.sandboxed &&
        (config.cgroups.limits_memory() || config.cgroups.limits_processes())) {
      try {
        cgroup = sandbox::RunCgroup::create(config.cgroups, "install-" + std::to_string(++install_count), limits);
        join = cgroup.open_join_fds();
      } catch (const std::exception& e) {
        throw StoreError(std::string("cannot create the installer's control group: ") + e.what());
      }
    }
    deps::InstallRequest request;
    request.interpreter = &interp;
    request.requirements = reqs;
    request.target = target;
    request.cache_dir = store.installer_cache_dir();
    request.interpreter_has_pip = has_pip;
    request.cgroup_join_fds = join.fds();
    request.memory_counted = !cgroup.empty() && config.cgroups.limits_memory();
    request.processes_counted = !cgroup.empty() && config.cgroups.limits_processes();
    ++installer_runs;
    deps::InstallOutcome outcome = deps::run_installer(config.installer, request, on_line, ks.get());
    if (!cgroup.empty()) {
      const sandbox::CgroupStats stats = cgroup.read_stats();
      cgroup.remove();
      if (!outcome.ok && (stats.memory_limit_hits > 0 || stats.oom_kills > 0)) {
        outcome.error = "the installer reached the memory limit (" +
                        std::to_string(limits.memory_bytes >> 20) + " MiB)" +
                        (outcome.error.empty() ? "" : "; its last output:\n" + outcome.error);
      } else if (!outcome.ok && stats.pids_limit_hits > 0) {
        outcome.error = "the installer reached the process limit (" +
                        std::to_string(limits.max_processes) + ")" +
                        (outcome.error.empty() ? "" : "; its last output:\n" + outcome.error);
      }
    }
    return outcome;
  }

  // Worker thread: the whole resolution and, when needed, the install for one request set.
  EnvResult resolve(const std::string& request_key, std::uint64_t job, const Interpreter& interp,
                    const std::vector<Requirement>& reqs) {
    EnvResult result;
    if (stopped) {
      result.status = EnvResult::Status::error;
      result.error = "the server is shutting down";
      return result;
    }
    progress(request_key, job, "resolving",
             "checking " + std::to_string(reqs.size()) + " requirement(s) against Python " +
                 interp.version + " (" + interp.executable + ")");
    RequirementCheck check = cached_check(request_key, interp, reqs);
    std::vector<Requirement> missing;
    for (const auto& s : check.statuses) {
      if (s.satisfied) {
        result.from_interpreter.push_back(s.requirement.name + " " + s.installed_version);
        result.import_names = merge_names(result.import_names, s.import_names);
      } else {
        missing.push_back(s.requirement);
      }
    }
    if (missing.empty()) return result;

    open_store();
    std::vector<std::string> specs;
    for (const auto& r : missing) specs.push_back(r.raw.empty() ? canonical_requirement(r) : r.raw);
    result.installed = specs;
    result.env_key = environment_key(interp, missing, config.installer.index);

    bool built = false;
    StoredEnv env = store.get_or_build(
        result.env_key,
        {{"interpreter", interp.executable}, {"version", interp.version}, {"requirements", specs}},
        [&](const std::string& site) {
          built = true;
          std::string names;
          for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s;
          progress(request_key, job, "installing", "installing " + names);
          auto outcome = install(job, interp, specs, site, check.interpreter_has_pip,
                                 [&](std::string_view line) {
                                   auto stage = progress_stage(line);
                                   if (!stage.empty()) progress(request_key, job, stage, std::string(line));
                                 });
          if (!outcome.ok) {
            if (outcome.process.killed || outcome.process.timed_out) {
              throw std::runtime_error("dependency installation stopped: " + outcome.error);
            }
            throw InstallFailed(outcome.error);
          }
          // Every file as its distribution's RECORD lists it, and nothing else, before it is
          // published (record_check.h).
          const deps::RecordCheck verified = deps::check_records(site);
          if (!verified.ok()) {
            spdlog::warn("{}: {}", site, verified.describe());
            throw InstallFailed(verified.describe());
          }
          spdlog::debug("{}: {} distribution(s), {} file(s) verified against their RECORD", site,
                        verified.distributions, verified.files);
          // What the environment really provides, and the modules to pre-import from it.
          RequirementCheck after = check_requirements(interp, missing, {site}, config.installer.container);
          std::vector<std::string> imports;
          for (const auto& s : after.statuses) {
            if (!s.satisfied) {
              spdlog::warn("after installing, {} is still not satisfied: {}", s.requirement.raw, s.reason);
            }
            imports = merge_names(imports, s.import_names);
          }
          return imports;
        });
    if (built) {
      auto evicted = store.evict();
      if (!evicted.empty()) {
        spdlog::info("environment cache: evicted {} environment(s)", evicted.size());
      }
    }
    result.reused = !built;
    result.env_root = env.root;
    result.site_dir = env.site_dir;
    result.import_names = merge_names(env.import_names, result.import_names);
    result.lease = env.lease;
    return result;
  }

  void run_job(const std::string& request_key, std::uint64_t job, Interpreter interp,
               std::vector<Requirement> reqs) {
    EnvResult result;
    try {
      result = resolve(request_key, job, interp, reqs);
    } catch (const InstallFailed& e) {
      result = {};
      result.status = EnvResult::Status::install_failed;
      result.error = e.what();
    } catch (const std::exception& e) {
      result = {};
      result.status = EnvResult::Status::error;
      result.error = e.what();
      spdlog::error("dependency environment failed: {}", e.what());
    }
    {
      std::lock_guard lock(mutex);
      abandoned_jobs.erase(job);
    }
    deliver(request_key, job, std::move(result));
  }

  // `uv --version` ("uv 0.13.9 (x86_64-unknown-linux-gnu)") of the uv at `path`, asked again
  // only when that file changes; "" when it does not answer. Worker threads only.
  std::string uv_version(const std::string& path) {
    struct stat st{};
    const std::string stamp = ::stat(path.c_str(), &st) == 0
                                  ? path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) +
                                        "." + std::to_string(st.st_mtim.tv_nsec)
                                  : path;
    {
      std::lock_guard lock(mutex);
      if (uv_version_stamp == stamp) return uv_version_text;
    }
    sandbox::ProcessSpec spec;
    spec.argv = {path, "--version"};
    spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "NO_COLOR=1"};
    spec.timeout_ms = 5000;
    spec.max_capture = 4096;
    std::string version;
    try {
      const auto result = sandbox::run_process(spec);
      if (result.ok()) version = result.out.substr(0, result.out.find('\n'));
    } catch (const sandbox::SpawnError& e) {
      spdlog::warn("cannot ask {} for its version: {}", path, e.what());
    }
    std::lock_guard lock(mutex);
    uv_version_stamp = stamp;
    uv_version_text = version;
    return version;
  }

  void kill_all() {
    std::lock_guard lock(mutex);
    for (const auto& ks : running) ks->kill();
  }
};

Environments::Environments(asio::io_context& io, EnvironmentsConfig config)
    : impl_(std::make_shared<Impl>(io, std::move(config))) {}

Environments::~Environments() {
  impl_->stopped = true;
  impl_->kill_all();
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
  impl_->pool.join();
}

std::uint64_t Environments::ensure(const Interpreter& interpreter, std::vector<Requirement> requirements,
                                   ProgressFn progress, DoneFn done) {
  auto& impl = *impl_;
  // Markers are decided here, for this interpreter: a requirement that does not apply is
  // neither checked nor installed. Later duplicates (by name) win.
  const MarkerEnvironment markers = marker_environment(interpreter);
  std::vector<Requirement> applicable;
  for (auto& r : requirements) {
    if (!r.marker.empty() && !evaluate_marker(r.marker, markers)) continue;
    const std::string name = r.normalized_name.empty() ? normalize_name(r.name) : r.normalized_name;
    auto same = std::find_if(applicable.begin(), applicable.end(), [&](const Requirement& a) {
      return (a.normalized_name.empty() ? normalize_name(a.name) : a.normalized_name) == name;
    });
    if (same != applicable.end()) {
      *same = std::move(r);
    } else {
      applicable.push_back(std::move(r));
    }
  }
  if (impl.stopped) {
    EnvResult r;
    r.status = EnvResult::Status::error;
    r.error = "the server is shutting down";
    asio::post(impl.io, [done = std::move(done), r = std::move(r)] { done(r); });
    return 0;
  }
  if (applicable.empty()) {
    asio::post(impl.io, [done = std::move(done)] { done(EnvResult{}); });
    return 0;
  }
  const std::string request_key = environment_key(interpreter, applicable, impl.config.installer.index);
  const std::uint64_t ticket = impl.next_ticket++;
  auto [it, inserted] = impl.pending.try_emplace(request_key);
  it->second.waiters.push_back({ticket, std::move(progress), std::move(done)});
  if (!inserted) return ticket;  // the same set is already being resolved: wait for it
  const std::uint64_t job = it->second.job = impl.next_job++;
  asio::post(impl.pool, [self = impl_, request_key, job, interp = interpreter,
                         reqs = std::move(applicable)]() mutable {
    self->run_job(request_key, job, std::move(interp), std::move(reqs));
  });
  return ticket;
}

void Environments::abandon(std::uint64_t ticket) {
  auto& impl = *impl_;
  for (auto it = impl.pending.begin(); it != impl.pending.end(); ++it) {
    auto& waiters = it->second.waiters;
    const auto w = std::find_if(waiters.begin(), waiters.end(),
                                [ticket](const Impl::Waiter& x) { return x.ticket == ticket; });
    if (w == waiters.end()) continue;
    waiters.erase(w);
    if (waiters.empty()) {
      // Nobody waits any more: the install stops now (its environment is never published).
      const std::uint64_t job = it->second.job;
      impl.pending.erase(it);
      std::lock_guard lock(impl.mutex);
      impl.abandoned_jobs.insert(job);
      if (auto r = impl.running_jobs.find(job); r != impl.running_jobs.end()) r->second->kill();
    }
    return;
  }
}

void Environments::warm_cache(const Interpreter& interpreter, std::vector<std::string> packages,
                              std::function<void(std::string)> done) {
  auto& impl = *impl_;
  impl.warm_state = "running";
  asio::post(impl.pool, [self = impl_, interp = interpreter, packages = std::move(packages),
                         done = std::move(done)]() mutable {
    std::string status;
    try {
      self->open_store();
      const auto last = self->store.last_warm(interp.executable);
      // A fresh success is not repeated at every start; a failure (e.g. no index reachable) is
      // retried only after an hour, so starting servers does not mean running installers.
      if (self->config.installer.index.offline) {
        status = "skipped: --offline";
      } else if (last && last->status.rfind("done", 0) == 0 && last->age_seconds < 24 * 3600) {
        status = last->status + " (" + std::to_string(last->age_seconds / 60) + " min ago)";
      } else if (last && last->status.rfind("failed", 0) == 0 && last->age_seconds < 3600) {
        status = "skipped: the last attempt " + std::to_string(last->age_seconds / 60) +
                 " min ago " + last->status;
      } else {
        std::vector<Requirement> reqs;
        for (const auto& p : packages) {
          std::string error;
          if (auto r = parse_requirement(p, &error)) {
            reqs.push_back(std::move(*r));
          } else {
            spdlog::warn("warm-up list: ignoring '{}': {}", p, error);
          }
        }
        RequirementCheck check = check_requirements(interp, reqs, {}, self->config.installer.container);
        std::vector<std::string> missing;
        for (const auto& s : check.statuses) {
          if (!s.satisfied) missing.push_back(s.requirement.raw);
        }
        if (missing.empty()) {
          status = "done: the interpreter already has every warm-up package";
        } else {
          self->open_store();
          std::string tmpl = self->store.installer_cache_dir() + "/.warm-XXXXXX";
          if (::mkdtemp(tmpl.data()) == nullptr) throw StoreError("cannot create " + tmpl);
          struct Cleanup {
            std::string dir;
            ~Cleanup() {
              std::error_code ec;
              fs::remove_all(dir, ec);
            }
          } cleanup{tmpl};
          auto outcome = self->install(0, interp, missing, tmpl, check.interpreter_has_pip, {});
          status = outcome.ok ? "done: " + std::to_string(missing.size()) + " package(s) cached for Python " +
                                    interp.version
                              : "failed: " + outcome.error;
        }
        if (!self->stopped) self->store.record_warm(interp.executable, status);  // not an outcome: we stopped it
      }
    } catch (const std::exception& e) {
      status = std::string("failed: ") + e.what();
    }
    if (status.rfind("failed", 0) == 0) spdlog::warn("cache warming {}", status);
    asio::post(self->io, [self, status, done = std::move(done)] {
      self->warm_state = status;
      if (done) done(status);
    });
  });
}

void Environments::kill_installs() { impl_->kill_all(); }

void Environments::shutdown(std::function<void()> done) {
  impl_->stopped = true;
  impl_->kill_all();
  if (shutdown_thread_.joinable()) {
    asio::post(impl_->io, std::move(done));
    return;
  }
  // Joining blocks: do it off the io thread, then report back on it.
  shutdown_thread_ = std::thread([impl = impl_.get(), done = std::move(done)]() mutable {
    impl->pool.join();
    asio::post(impl->io, std::move(done));
  });
}

std::uint64_t Environments::installer_runs() const { return impl_->installer_runs.load(); }

void Environments::report(std::function<void(EnvironmentsStatus)> done) {
  auto& impl = *impl_;
  std::string warm = impl.warm_state;
  asio::post(impl.pool, [self = impl_, warm, done = std::move(done)]() mutable {
    EnvironmentsStatus status;
    status.cache_dir = self->store.cache_dir();
    status.max_bytes = self->store.max_bytes();
    const auto usage = self->store.usage();
    status.bytes = usage.bytes;
    status.environments = usage.environments;
    const auto uv = sandbox::find_executable(self->config.installer.uv_path);
    if (uv) {
      status.uv_version = self->uv_version(*uv);
      status.installer = (status.uv_version.empty() ? std::string("uv") : status.uv_version) + " (" + *uv + ")";
    } else {
      status.installer = "pip (python -m pip)";
    }
    if (self->config.installer.sandboxed) {
      status.installer += "; builds from source: " + deps::build_confinement(self->config.installer).description;
    }
    status.installer_sandboxed = self->config.installer.sandboxed;
    status.cache_warming = warm;
    asio::post(self->io, [status = std::move(status), done = std::move(done)] { done(status); });
  });
}

}  // namespace engine
