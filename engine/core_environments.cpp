// The core's part for dependency environments: which environment a job needs (installed off
// the queue's slots, the call's deadline and cancellation covering the install), and the zygote
// that serves an interpreter with or without an environment.
#include "engine/event_loop.h"  // first: see there
#include "engine/core.h"

#include <algorithm>
#include <cctype>

#include <spdlog/spdlog.h>

#include "engine/cache_dir.h"

namespace engine {

namespace {

// The part of the engine's configuration that concerns environments (cache dir, size bound, uv
// path, index options; the installer is sandboxed unless the backend is `none`; with the docker
// backend it and the requirement checks run in containers of the image, and the environments,
// built for the image's interpreter, live apart from the host's).
EnvironmentsConfig environments_config(const EngineConfig& config, const std::shared_ptr<DockerBackend>& docker) {
  EnvironmentsConfig c;
  c.cache_dir = config.cache_dir;
  if (docker) {
    std::string tag = docker->image();
    for (char& ch : tag) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-') ch = '_';
    }
    c.cache_dir = engine::cache_dir(config.cache_dir) + "/docker-" + tag;
    std::weak_ptr<DockerBackend> weak = docker;
    c.installer.container = [weak](const std::vector<std::string>& command, const std::vector<std::string>& env,
                                   const std::vector<ContainerMount>& mounts, bool network, uid_t uid, gid_t gid) {
      auto backend = weak.lock();
      if (!backend || !backend->runtime()) throw std::runtime_error("the docker backend is gone");
      const auto status = backend->check();
      if (!status.ready()) throw std::runtime_error("the docker sandbox is unavailable: " + status.problem);
      std::vector<std::pair<std::string, bool>> binds;
      for (const auto& m : mounts) binds.emplace_back(m.path, m.writable);
      return docker_oneshot_argv(status.docker_path, backend->image(), backend->runtime()->seccomp_profile(),
                                 backend->owner(), command, env, binds, network, uid, gid);
    };
  }
  c.max_bytes = config.env_cache_max_mb << 20;
  c.installer.uv_path = config.uv_path;
  c.installer.index = config.index;
  c.installer.sandboxed = config.policy.backend != sandbox::Backend::none;
  c.installer.limits = config.policy.limits;
  c.installer.builds_without_network = !config.policy.network;
  c.installer.build_python_path = config.build_python_path;
  c.installer.network_agent_path = config.network_agent_path;
  return c;
}

}  // namespace

std::string zygote_key(const Interpreter& interpreter, const EnvResult* env) {
  std::string key = interpreter.executable;
  if (env == nullptr) return key;
  if (env->env_root) key += "|env:" + env->env_key;
  for (const auto& name : env->import_names) key += "|" + name;
  return key;
}

void Core::stop_waiting_for_environment(const std::shared_ptr<Job>& job) {
  job->install_deadline.reset();
  if (job->environment_ticket != 0 && envs_) envs_->abandon(job->environment_ticket);
  job->environment_ticket = 0;
  job->environment_pending = false;
}

Environments& Core::environments() {
  if (!envs_) {
    EnvironmentsConfig c = environments_config(config_, docker_);
    c.cgroups = startup_.cgroups();  // ready: no job is stepped before the start-up
    envs_ = std::make_unique<Environments>(io_, std::move(c));
  }
  return *envs_;
}

void Core::prepare_environment(const std::shared_ptr<Job>& job) {
  job->environment_pending = true;
  job->preparing_since = std::chrono::steady_clock::now();
  // The call's deadline covers the install: at the timeout the call is answered, and the
  // install is killed unless another call still waits for the same environment.
  job->install_deadline = std::make_unique<asio::steady_timer>(io_);
  job->install_deadline->expires_after(std::chrono::seconds(std::max(1, job->request.timeout_seconds)));
  job->install_deadline->async_wait([weak = weak_from_this(), weak_job = std::weak_ptr<Job>(job)](
                                        const std::error_code& ec) {
    auto self = weak.lock();
    auto j = weak_job.lock();
    if (ec || !self || !j || j->stage != Job::Stage::preparing) return;
    spdlog::info("run {}: its dependencies were not ready within {} s", j->id, j->request.timeout_seconds);
    self->scheduler_.remove(j->id);
    self->stop_waiting_for_environment(j);
    j->before.timed_out = true;
    self->answer(j, std::move(j->before));
  });
  std::weak_ptr<Core> weak = weak_from_this();
  std::weak_ptr<Job> weak_job = job;
  // Progress for callers with a progress token: one step per installer stage.
  Environments::ProgressFn progress;
  if (job->progress) {
    progress = [weak_job, step = std::make_shared<double>(0)](const std::string& stage, const std::string& message) {
      auto j = weak_job.lock();
      if (!j || j->stage == Job::Stage::answered || !j->progress) return;
      *step += 1;
      j->progress(*step, std::nullopt, stage + (message.empty() ? "" : ": " + message));
    };
  }
  job->environment_ticket = environments().ensure(*job->interpreter, job->requirements, std::move(progress), [weak, weak_job](EnvResult result) {
    auto self = weak.lock();
    auto j = weak_job.lock();
    if (!self || !j || j->stage != Job::Stage::preparing) return;
    j->environment_pending = false;
    j->environment_ticket = 0;
    j->install_deadline.reset();
    if (result.status == EnvResult::Status::error) {
      self->scheduler_.remove(j->id);
      self->refuse(j, result.error);
      return;
    }
    j->env = std::move(result);
    self->pump();
  });
}

std::shared_ptr<ZygoteProcess> Core::zygote_for(const Interpreter& interpreter, const EnvResult* env) {
  ZygoteLaunch launch;
  launch.interpreter = interpreter;
  launch.policy = config_.policy;
  launch.zygote_path = config_.zygote_path;
  launch.bwrap_path = config_.policy.backend == sandbox::Backend::native ? sandbox::find_bwrap() : "";
  if (docker_) {
    const auto status = docker_->status();
    launch.docker.docker_path = status ? status->docker_path : docker_->docker_path();
    launch.docker.image = docker_->image();
    launch.docker.owner = docker_->owner();
    if (const DockerRuntime* runtime = docker_->runtime()) {
      launch.docker.runtime_dir = runtime->path();
      launch.docker.seccomp_profile = runtime->seccomp_profile();
    }
    launch.docker.runs = scheduler_.max_running();
  }
  launch.preload = config_.preload_modules;
  std::shared_ptr<void> lease;
  if (env != nullptr) {
    // The environment's zygote: its site dir first on sys.path, mounted read-only, and what its
    // distributions provide imported ahead (a failing import is logged and skipped).
    for (const auto& name : env->import_names) {
      if (std::find(launch.preload.begin(), launch.preload.end(), name) == launch.preload.end()) {
        launch.preload.push_back(name);
      }
    }
    if (env->env_root) launch.env_root = *env->env_root;
    lease = env->lease;
  }
  launch.max_value_bytes = config_.max_output_bytes;
  launch.max_images = config_.max_images;
  launch.rlimit_fallbacks.memory = !startup_.cgroups().limits_memory();
  launch.rlimit_fallbacks.processes = !startup_.cgroups().limits_processes();
  launch.user_quotas = user_quotas_;
  if (run_network_.user_mode) {
    launch.pasta_path = run_network_.pasta;
    launch.network_agent_path = config_.network_agent_path;
    launch.run_blocking = [this](std::function<void()> work) { asio::post(worker_, std::move(work)); };
    launch.network_per_run = run_network_.per_run;
    launch.run_network_work = [this](std::function<void()> work) { asio::post(network_worker_, std::move(work)); };
  }
  return pool_.get_or_start(zygote_key(interpreter, env), launch, std::move(lease));
}

}  // namespace engine
