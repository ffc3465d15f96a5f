#include "engine/event_loop.h"  // first: see there
#include "engine/core.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/cache_dir.h"
#include "engine/interpreters/probe_cache.h"
#include "sandbox/os_error.h"
#include "profiles/mpes_profiles.h"

namespace engine {
namespace {

// Run cgroups kept ready: enough for a few runs in flight; a larger burst makes the rest at once.
constexpr std::size_t kRunCgroupsAhead = 4;
// The nice value of the threads that prepare for later runs.
constexpr int kBackgroundNice = 10;

// A program shipped beside the server's executable (the zygote, the builds' stand-in).
std::string beside_server(const char* name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  return (self.parent_path() / name).string();
}

// Where interpreters come from: the host's, or with the docker backend the image's alone.
InterpreterSources interpreter_sources(const EngineConfig& config, const std::shared_ptr<DockerBackend>& docker) {
  if (!docker) return host_interpreter_sources(config.uv_path, engine::cache_dir(config.cache_dir));
  InterpreterSources sources;
  sources.quick_default = [docker] { return docker->check().interpreter; };
  sources.discover_all = [docker] {
    const DockerStatus status = docker->check();
    if (!status.interpreter) throw std::runtime_error("docker backend: " + status.problem);
    return std::vector<Interpreter>{*status.interpreter};
  };
  return sources;
}

std::shared_ptr<DockerBackend> docker_backend(const EngineConfig& config) {
  if (config.policy.backend != sandbox::Backend::docker) return nullptr;
  return std::make_shared<DockerBackend>(config.docker_path,
                                         config.docker_image.empty() ? kDefaultDockerImage : config.docker_image);
}

}  // namespace

std::string sandbox_label(sandbox::Backend backend) {
  switch (backend) {
    case sandbox::Backend::native: return "native";
    case sandbox::Backend::none: return "none (unsandboxed)";
    case sandbox::Backend::docker: return "docker";
  }
  return "native";
}

Core::Core(asio::io_context& io, EngineConfig config)
    : io_(io),
      config_(std::move(config)),
      docker_(docker_backend(config_)),
      catalog_(io_, worker_.get_executor(), interpreter_sources(config_, docker_), config_.python_version),
      scheduler_(max_concurrent_runs(config_)),
      pool_(io_, {config_.max_zygotes, config_.zygote_idle_seconds},
            [this](const std::string& key) { return catalog_.is_default(key); },
            [this](const std::string& key, ZygoteProcess::State state, const std::string& reason) {
              on_zygote_state(key, state, reason);
            }),
      startup_(io_, worker_.get_executor(), catalog_, config_.policy.backend != sandbox::Backend::none,
               config_.warm_cache,
               Startup::Hooks{
                   [this](const Interpreter& in) { zygote_for(in); },
                   [this] { pump(); },
                   [this] {
                     if (warm_) pool_.start_idle_sweep();
                     pump();
                   },
                   [this](const Interpreter& in) {
                     environments().warm_cache(in, parse_package_list(profiles::warmup_packages()),
                                               [](const std::string& s) { spdlog::info("cache warming {}", s); });
                   },
                   [this] { return scheduler_.queued() + scheduler_.running() > 0; }}),
      run_cgroups_(startup_.cgroups(), config_.policy.limits, cgroup_worker_.get_executor(), kRunCgroupsAhead),
      sessions_(io_, Sessions::Config{config_.max_sessions, config_.session_idle_seconds, config_.session_snapshots,
                                      SessionSandbox::Config{&startup_.cgroups(), config_.policy.limits,
                                                             cgroup_worker_.get_executor()},
                                      [this](const std::string& id) { return step_waiting(id); }}) {
  // asio ignores a failure to watch its own wake-up descriptors when its loop is made (epoll_ctl:
  // ENOSPC once the user's epoll watches are used up, e.g. by the runs of another server of this
  // user), and its loop then never wakes: a loop that cannot watch a descriptor now is refused.
  {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(sandbox::errno_text("a pipe for the event loop's check", errno));
    ::close(p[1]);
    asio::posix::stream_descriptor probe(io_);
    if (const std::error_code ec = adopt_fd(probe, p[0])) {
      throw std::runtime_error(watch_failure("descriptors in the event loop", ec) + "; the server cannot start");
    }
  }
  // Work for later runs (linking the next spare's network, making and removing runs' cgroups)
  // yields to the runs in progress and their answers, which the two cores of a small machine
  // otherwise share with it.
  for (asio::thread_pool* background : {&cgroup_worker_, &network_worker_}) {
    asio::post(*background, [] { ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kBackgroundNice); });
  }
  if (config_.zygote_path.empty()) config_.zygote_path = beside_server("mcp-python-exec-sandbox-zygote");
  if (config_.build_python_path.empty()) {
    config_.build_python_path = beside_server("mcp-python-exec-sandbox-build-python");
  }
  if (config_.network_agent_path.empty()) config_.network_agent_path = beside_server("mcp-python-exec-sandbox-network");
  run_network_ = plan_run_network(config_.policy.backend, config_.policy.network,
                                  sandbox::UserNetwork::unavailable_reason(),
                                  sandbox::UserNetwork::find_pasta(), sandbox::UserNetwork::find_nft());
  if (config_.policy.network && config_.policy.backend == sandbox::Backend::native) {
    if (run_network_.user_mode) {
      spdlog::info("--network on: {}", run_network_.description);
    } else {
      spdlog::warn("--network on: {}", run_network_.description);
    }
  }
  if (config_.policy.backend != sandbox::Backend::none) {
    // Every run maps to one host uid: the kernel's per-user quotas are shared out between them.
    const sandbox::UserQuotaPools pools = sandbox::read_user_quota_pools();
    const unsigned sandboxes = max_concurrent_runs(config_) + config_.max_sessions;
    user_quotas_ = sandbox::share_user_quotas(pools, sandboxes);
    user_quotas_description_ = sandbox::describe_user_quotas(user_quotas_, pools, sandboxes);
    spdlog::info("per-user quotas: {}", user_quotas_description_);
  } else {
    user_quotas_description_ = "none (unsandboxed: runs share the server's user)";
  }
  // The zygotes probe again where they make the runs (a container's seccomp profile may differ)
  // and warn when they cannot scope them.
  run_scoping_ = sandbox::plan_run_scoping(config_.policy.backend != sandbox::Backend::none, sandbox::probe_landlock());
  if (config_.policy.backend != sandbox::Backend::none) {
    if (run_scoping_.applied()) {
      spdlog::info("run scoping: {}", run_scoping_.description);
    } else {
      spdlog::warn("run scoping: {}", run_scoping_.description);
    }
  }
}

Core::~Core() {
  worker_.join();
  cgroup_worker_.join();
  network_worker_.join();
}

void Core::start_warmup() {
  warm_ = true;
  startup_.begin(true);
}

std::uint64_t Core::execute(RunRequest request, Engine::ProgressFn progress, Engine::DoneFn done) {
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  job->request = std::move(request);
  job->progress = std::move(progress);
  job->done = std::move(done);
  if (job->request.session_id) job->kind = Job::Kind::step;
  jobs_[job->id] = job;
  if (shutting_down_) {
    job->before.cancelled = true;
    refuse(job, "the server is shutting down");
    return job->id;
  }
  scheduler_.enqueue(job->id, job->request.client);
  startup_.begin(false);
  pump();
  return job->id;
}

void Core::cancel(std::uint64_t id) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  auto job = it->second;
  if (job->execution) {
    job->execution->cancel();
    return;
  }
  if (job->session && job->stage == Job::Stage::running) {
    job->session->cancel_step();
    return;
  }
  scheduler_.remove(id);
  job->before.cancelled = true;
  stop_waiting_for_environment(job);
  answer(job, std::move(job->before));
}

void Core::on_zygote_state(const std::string& key, ZygoteProcess::State state, const std::string& reason) {
  startup_.zygote_state(key, state);
  if (state != ZygoteProcess::State::failed) {
    pump();
    return;
  }
  spdlog::error("{}", reason);
  pump();  // fails the runs waiting for it
  const auto it = pool_.zygotes().find(key);
  if (it == pool_.zygotes().end() || it->second->state() != ZygoteProcess::State::failed) return;
  const bool was_ready = !it->second->python_version().empty();
  pool_.forget(key);
  // A zygote lost after warm-up is replaced at once (a start failure waits for the next call).
  if (was_ready && !shutting_down_) {
    for (const auto& in : catalog_.all()) {
      if (in.executable == key) zygote_for(in);
    }
  }
}

void Core::pump() {
  if (shutting_down_ || !startup_.ready()) return;
  scheduler_.pump([this](Scheduler::Id id) {
    const auto it = jobs_.find(id);
    if (it == jobs_.end()) return Step::dropped;
    const auto job = it->second;  // a copy: answering a job erases it from jobs_
    return step(job);
  });
}

Scheduler::Step Core::step(const std::shared_ptr<Job>& job) {
  if (job->stage == Job::Stage::resolving && docker_) {
    // Fail closed: without a daemon, the image or a container the daemon accepts, no run.
    const auto status = docker_->status();
    if (!status) {
      std::weak_ptr<Core> weak = weak_from_this();
      catalog_.start_quick([weak] {  // the docker check; then again
        if (auto self = weak.lock()) self->pump();
      });
      return Step::waiting;
    }
    if (!status->ready()) {
      refuse(job, "the docker sandbox is unavailable: " + status->problem + ". Fix: " + status->fix);
      return Step::dropped;
    }
  }
  if (job->kind == Job::Kind::step) return step_in_session(job);
  if (job->stage == Job::Stage::resolving) {
    const InterpreterChoice choice = catalog_.resolve(job->request.python_version);
    if (choice.wait) {
      startup_.start_discovery();
      return Step::waiting;
    }
    if (!choice.interpreter) {
      refuse(job, choice.error, choice.refused);
      return Step::dropped;
    }
    job->interpreter = choice.interpreter;
    job->stage = Job::Stage::validating;
  }
  if (job->stage == Job::Stage::validating) {
    if (!validate(job)) return job->stage == Job::Stage::answered ? Step::dropped : Step::waiting;
    job->stage = job->requirements.empty() ? Job::Stage::dispatching : Job::Stage::preparing;
  }
  if (job->stage == Job::Stage::preparing) {
    // Resolved off the queue's slots: installs can take minutes, runs keep flowing.
    if (!job->env) {
      if (!job->environment_pending) prepare_environment(job);
      return Step::waiting;
    }
    if (job->env->status == EnvResult::Status::install_failed) {
      job->before.install_error = job->env->error;
      answer(job, std::move(job->before));
      return Step::dropped;
    }
    job->stage = Job::Stage::dispatching;
  }
  const EnvResult* env =
      job->env && (job->env->env_root || !job->env->import_names.empty()) ? &*job->env : nullptr;
  // A zygote that failed fails the runs waiting for it (on_zygote_state then forgets it, so a
  // later run tries again) rather than being restarted in a loop here.
  const auto existing = pool_.zygotes().find(zygote_key(*job->interpreter, env));
  auto zygote = existing != pool_.zygotes().end() ? existing->second : zygote_for(*job->interpreter, env);
  switch (zygote->state()) {
    case ZygoteProcess::State::ready:
      if (job->kind == Job::Kind::create) {
        dispatch_create(job, zygote);
      } else {
        dispatch(job, zygote);
      }
      return Step::started;
    case ZygoteProcess::State::starting:
      return Step::waiting;
    case ZygoteProcess::State::failed:
    case ZygoteProcess::State::stopped:
      break;
  }
  std::string message = zygote->failure();
  if (config_.policy.backend == sandbox::Backend::native) message += native_problem_hint();
  refuse(job, message);
  return Step::dropped;
}

// The script's PEP 723 block and the dependencies parameter, against the interpreter that will
// run it. An invalid block or an unsatisfied requires-python refuses the run (isError). False
// when it cannot go on now (answered, or waiting for the discovery to list the versions).
bool Core::validate(const std::shared_ptr<Job>& job) {
  const auto validation = validate_script(job->request.script, job->request.dependencies,
                                          marker_environment(*job->interpreter));
  if (validation.valid) {
    job->requirements = validation.dependencies;
    return true;
  }
  if (validation.requires_python && !catalog_.discovered()) {
    // The refusal lists the versions that are available: wait until all of them are known.
    startup_.start_discovery();
    return false;
  }
  std::string message;
  for (const auto& e : validation.errors) message += (message.empty() ? "" : "; ") + e;
  if (validation.requires_python) {
    message += " (Python versions available: " + catalog_.versions_list() +
               "; choose one with the python_version argument)";
  }
  refuse(job, "the script cannot run: " + message, true);
  return false;
}

void Core::dispatch(const std::shared_ptr<Job>& job, const std::shared_ptr<ZygoteProcess>& zygote) {
  job->stage = Job::Stage::running;
  job->zygote_python_version = zygote->python_version();
  std::weak_ptr<Core> weak = weak_from_this();
  Execution::Config config = execution_config(true);
  // At the runner's end record only where the run's cgroup counts its memory and processes: the
  // end reason then needs no more than the cgroup and the exit code (not the init's rusage).
  config.answer_at_end_record = startup_.cgroups().limits_memory() && startup_.cgroups().limits_processes();
  job->execution = std::make_shared<Execution>(io_, job->id, std::move(config), [weak, job](RunEvidence evidence) {
    if (auto self = weak.lock()) self->answer(job, std::move(evidence));
  });
  // What the install left of the call's timeout (at least a second).
  int timeout = std::max(1, job->request.timeout_seconds);
  if (job->preparing_since) {
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - *job->preparing_since);
    timeout = std::max(1, timeout - static_cast<int>(waited.count()));
  }
  const auto files = files_request(job->request);
  job->execution->start(zygote, job->request.script, static_cast<std::uint32_t>(timeout),
                        files ? &*files : nullptr);
}

Execution::Config Core::execution_config(bool own_cgroup) {
  Execution::Config config;
  config.max_output_bytes = config_.max_output_bytes;
  config.result_limits = ResultLimits{config_.max_output_bytes, config_.max_images,
                                      static_cast<std::size_t>(config_.max_output_file_bytes)};
  config.cgroups = own_cgroup ? &run_cgroups_ : nullptr;
  config.cgroup_remover = cgroup_worker_.get_executor();
  return config;
}

std::optional<FilesRequest> Core::files_request(const RunRequest& request) const {
  if (request.input_files.empty() && request.output_files.empty()) return std::nullopt;
  FilesRequest files;
  files.inputs = request.input_files;
  files.output_globs = request.output_files;
  files.max_output_bytes = config_.max_output_file_bytes;
  return files;
}

void Core::refuse(const std::shared_ptr<Job>& job, const std::string& message, bool refused) {
  job->before.service_error = message;
  job->before.refused = refused;
  answer(job, std::move(job->before));
}

void Core::complete_evidence(const Job& job, RunEvidence& evidence) const {
  evidence.sandbox = sandbox_label(config_.policy.backend);
  // A static interpreter (no shared libpython) cannot be embedded: a fresh one runs each script.
  evidence.execution_path = job.kind == Job::Kind::step                     ? "session"
                            : job.interpreter && !job.interpreter->shared() ? "spawn"
                                                                              : "zygote";
  if (job.interpreter) evidence.python_version = job.interpreter->version;
  if (!job.zygote_python_version.empty()) evidence.python_version = job.zygote_python_version;
  evidence.max_output_bytes = config_.max_output_bytes;
  evidence.memory_limit_bytes = config_.policy.limits.memory_bytes;
  evidence.memory_counted = startup_.cgroups().limits_memory();
  evidence.processes_counted = startup_.cgroups().limits_processes();
  evidence.cpu_limit_seconds = config_.policy.limits.cpu_seconds != 0
                                   ? config_.policy.limits.cpu_seconds
                                   : static_cast<std::uint32_t>(std::max(1, job.request.timeout_seconds));
}

void Core::answer(const std::shared_ptr<Job>& job, RunEvidence evidence) {
  if (job->stage == Job::Stage::answered) return;
  if (answer_create_failure(job, evidence)) return;
  const bool ran = job->stage == Job::Stage::running;
  job->stage = Job::Stage::answered;
  jobs_.erase(job->id);
  scheduler_.finished(job->id);
  job->execution.reset();
  job->session.reset();

  complete_evidence(*job, evidence);
  RunResult result = decide_outcome(std::move(evidence));
  if (job->step_report) result.session = std::move(job->step_report);
  if (job->done) {
    // Posted: the caller may start new runs from its callback while we are in the middle of ours.
    asio::post(io_, [done = std::move(job->done), result = std::move(result)]() mutable { done(std::move(result)); });
  }
  if (scheduler_.queued() == 0 && scheduler_.running() == 0) startup_.idle();
  if (ran) {
    std::weak_ptr<Core> weak = weak_from_this();
    asio::post(io_, [weak] {
      if (auto self = weak.lock()) self->pump();
    });
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

void Core::find_interpreter(std::optional<std::string> version, Engine::InterpreterFn done) {
  catalog_.select(std::move(version), [done = std::move(done)](InterpreterChoice choice) {
    done(std::move(choice.interpreter), choice.error);
  });
}

// Probed, not assumed: the host probe runs bwrap once (off the loop, cached), after the setup
// and the discovery, so that the report lists every interpreter and the cgroups really used.
void Core::environment_report(std::function<void(EnvironmentReport)> done) {
  auto build = [this, done = std::move(done)] {
    EnvironmentParts parts{config_, catalog_, pool_, scheduler_, startup_.cgroups(), probe_, docker_.get(),
                           run_network_, run_scoping_, user_quotas_description_};
    EnvironmentReport report = describe_environment(parts);
    environments().report([report = std::move(report), done, warm = config_.warm_cache](EnvironmentsStatus status) mutable {
      if (!warm) status.cache_warming = "disabled (--no-warm-cache)";
      report.environments = std::move(status);
      done(std::move(report));
    });
  };
  startup_.begin(false);
  startup_.start_discovery();
  std::weak_ptr<Core> weak = weak_from_this();
  auto when_probed = [this, weak, build = std::move(build)]() mutable {
    catalog_.on_discovered([weak, build = std::move(build)]() mutable {
      if (weak.lock()) build();
    });
  };
  if (probe_) {
    when_probed();
    return;
  }
  probe_waiters_.push_back(std::move(when_probed));
  if (probe_running_) return;
  probe_running_ = true;
  asio::post(worker_, [&io = io_, weak, policy = config_.policy] {
    sandbox::ProbeResult probe = sandbox::probe_host(policy);
    asio::post(io, [weak, probe = std::move(probe)] {
      auto self = weak.lock();
      if (!self) return;
      self->probe_ = probe;
      self->probe_running_ = false;
      auto waiters = std::move(self->probe_waiters_);
      self->probe_waiters_.clear();
      for (auto& w : waiters) w();
    });
  });
}

void Core::shutdown(std::function<void()> done) {
  if (shutting_down_) {
    asio::post(io_, std::move(done));
    return;
  }
  shutting_down_ = true;
  startup_.stop();
  sessions_.shutdown();  // their running steps are answered as cancelled
  for (const auto id : scheduler_.take_queued()) {
    if (const auto it = jobs_.find(id); it != jobs_.end()) {
      auto job = it->second;
      job->before.cancelled = true;
      answer(job, std::move(job->before));
    }
  }
  auto running = jobs_;
  for (const auto& [id, job] : running) {
    if (job->execution) job->execution->stop();
  }
  // Every zygote is reaped before `done` (bounded: a zygote's stop() escalates to SIGKILL).
  auto remaining = std::make_shared<int>(1 + (envs_ ? 1 : 0));
  auto step = [this, remaining, done = std::move(done)]() mutable {
    if (--*remaining != 0 || !done) return;
    if (startup_.cgroups().version == sandbox::CgroupVersion::none) {
      done();
      return;
    }
    // After the runs' cgroups (removed on that worker, in order) and those made ahead, the
    // server's own.
    asio::post(cgroup_worker_, [this, cgroups = startup_.cgroups(), done = std::move(done)]() mutable {
      run_cgroups_.stop();
      sandbox::release_cgroups(cgroups);
      asio::post(io_, std::move(done));
    });
  };
  if (envs_) envs_->shutdown(step);  // kills running installers
  std::function<void()> zygotes_stopped = step;
  if (docker_) {
    // Then whatever container of ours is still there (one whose zygote did not exit in time),
    // and the backend's runtime directory.
    const bool reachable = docker_->status() && docker_->status()->ready();
    zygotes_stopped = [this, step, reachable]() mutable {
      asio::post(worker_, [this, step = std::move(step), reachable]() mutable {
        if (reachable) {
          try {
            remove_owned_containers(docker_->status()->docker_path, docker_->owner());
          } catch (const std::exception& e) {
            spdlog::warn("removing the server's containers: {}", e.what());
          }
        }
        docker_->remove_runtime();
        asio::post(io_, std::move(step));
      });
    };
  }
  pool_.stop_all(zygotes_stopped);
}

}  // namespace engine
