// The engine's core; the facade (engine.h) hands every call to it. It wires the parts together
// and schedules, on the server's single-threaded io_context. What each part owns:
//   InterpreterCatalog  (interpreters/catalog.h)  which interpreters exist, which is the default
//   Environments        (environments/)           dependency environments and their installers
//   ZygotePool          (pool/zygote_pool.h)      the warm zygotes, their limits and idle stops
//   Scheduler           (scheduler.h)             which queued run may start, within the bound
//   Execution           (execution/execution.h)   one dispatched run, from its pipes to its kill
//   decide_outcome      (execution/outcome.h)     the RunResult from the evidence of a run's end
//   Startup             (startup.h)               when each part gets ready
//   Sessions            (sessions/)               live interpreters between calls, their snapshots
// A call becomes a Job: queued -> interpreter resolved -> script validated -> environment ready
// (installed off the queue's slots) -> zygote ready -> running (an Execution) -> answered.
// Blocking work (cgroup setup, interpreter probes, the host probe) runs on one worker thread and
// posts back; cgroup removal has its own worker so that shutdown never waits behind a probe, and
// so does linking each run's network namespace (a spare never waits behind a probe).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/environments/environments.h"
#include "engine/event_loop.h"
#include "engine/execution/execution.h"
#include "engine/execution/outcome.h"
#include "engine/interpreters/catalog.h"
#include "engine/pool/zygote_pool.h"
#include "engine/scheduler.h"
#include "engine/sessions/sessions.h"
#include "engine/startup.h"
#include "sandbox/landlock.h"
#include "sandbox/probe.h"
#include "sandbox/user_quotas.h"
#include "engine/pool/docker_host.h"

namespace engine {

// One call from its arrival to its answer.
struct Job {
  enum class Stage {
    resolving,    // which interpreter runs it (may wait for the discovery)
    validating,   // its PEP 723 block and dependencies against that interpreter
    preparing,    // its environment is being resolved or installed (holds no slot)
    dispatching,  // waits for its zygote
    running,      // an Execution has it
    answered,
  };
  enum class Kind {
    run,     // execute_python without a session
    step,    // execute_python in a session: the next step of request.session_id
    create,  // create_session: the same preparation as a run, then a session sandbox
  };
  std::uint64_t id = 0;
  Kind kind = Kind::run;
  Stage stage = Stage::resolving;
  RunRequest request;
  Engine::DoneFn done;
  Engine::ProgressFn progress;
  std::optional<Interpreter> interpreter;
  std::vector<Requirement> requirements;
  bool environment_pending = false;
  std::uint64_t environment_ticket = 0;  // Environments::ensure's, while it waits for it
  // The install counts against the call's timeout: when it started to wait, and its deadline.
  std::optional<std::chrono::steady_clock::time_point> preparing_since;
  std::unique_ptr<asio::steady_timer> install_deadline;
  std::optional<EnvResult> env;
  std::shared_ptr<Execution> execution;
  std::string zygote_python_version;
  // Evidence gathered before it runs (refusals, failures, cancellation).
  RunEvidence before;
  // Sessions.
  std::shared_ptr<Session> session;       // a step's session, once dispatched
  std::optional<StepReport> step_report;  // what the step did to it
  Engine::SessionFn created;              // create: the answer
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(asio::io_context& io, EngineConfig config);
  ~Core();

  void start_warmup();
  std::uint64_t execute(RunRequest request, Engine::ProgressFn progress, Engine::DoneFn done);
  void cancel(std::uint64_t id);
  void find_interpreter(std::optional<std::string> version, Engine::InterpreterFn done);
  void environment_report(std::function<void(EnvironmentReport)> done);
  void shutdown(std::function<void()> done);
  // Sessions (core_sessions.cpp).
  // The creation's job id (for cancel), or 0 when `done` was answered at once.
  std::uint64_t create_session(SessionRequest request, Engine::ProgressFn progress, Engine::SessionFn done);
  void fork_session(const std::string& owner, const std::string& id, std::optional<std::uint64_t> step,
                    Engine::SessionFn done);
  void reset_session(const std::string& owner, const std::string& id, std::uint64_t step, Engine::SessionFn done);
  void close_session(const std::string& owner, const std::string& id, Engine::SessionFn done);
  void list_sessions(const std::string& owner, std::function<void(SessionList)> done);
  void close_sessions_of(const std::string& owner, const std::string& why);

 private:
  using Step = Scheduler::Step;

  // Dependency environments and the zygotes that serve them (core_environments.cpp).
  void stop_waiting_for_environment(const std::shared_ptr<Job>& job);
  Environments& environments();
  void prepare_environment(const std::shared_ptr<Job>& job);
  std::shared_ptr<ZygoteProcess> zygote_for(const Interpreter& interpreter, const EnvResult* env = nullptr);
  void on_zygote_state(const std::string& key, ZygoteProcess::State state, const std::string& reason);
  void pump();
  Step step(const std::shared_ptr<Job>& job);
  bool validate(const std::shared_ptr<Job>& job);
  void dispatch(const std::shared_ptr<Job>& job, const std::shared_ptr<ZygoteProcess>& zygote);
  void refuse(const std::shared_ptr<Job>& job, const std::string& message, bool refused = false);
  void answer(const std::shared_ptr<Job>& job, RunEvidence evidence);
  // What the server knows of every run (its sandbox, interpreter, limits), for decide_outcome.
  void complete_evidence(const Job& job, RunEvidence& evidence) const;
  Execution::Config execution_config(bool own_cgroup);
  std::optional<FilesRequest> files_request(const RunRequest& request) const;
  // Sessions (core_sessions.cpp).
  Step step_in_session(const std::shared_ptr<Job>& job);
  // A step of session `id` is asked for and not started (Sessions::Config::step_waiting).
  bool step_waiting(const std::string& id) const;
  void dispatch_create(const std::shared_ptr<Job>& job, const std::shared_ptr<ZygoteProcess>& zygote);
  // A create job that did not get its session: answered with the error. False for other jobs.
  bool answer_create_failure(const std::shared_ptr<Job>& job, const RunEvidence& evidence);
  std::string native_problem_hint() const;

  asio::io_context& io_;
  EngineConfig config_;
  RunNetwork run_network_;  // how runs reach the network with --network on (decided once)
  sandbox::RunScoping run_scoping_;  // whether each run is a Landlock domain (probed once)
  sandbox::UserQuotas user_quotas_;  // each sandbox's share of the host user's quotas (decided once)
  std::string user_quotas_description_;
  asio::thread_pool worker_{1};
  asio::thread_pool cgroup_worker_{1};
  asio::thread_pool network_worker_{1};  // links each spare's network (--network on, per run)
  std::shared_ptr<DockerBackend> docker_;  // the docker backend only
  InterpreterCatalog catalog_;
  Scheduler scheduler_;
  ZygotePool pool_;
  std::unique_ptr<Environments> envs_;
  std::map<std::uint64_t, std::shared_ptr<Job>> jobs_;
  std::uint64_t next_id_ = 1;
  Startup startup_;
  // Runs' cgroups, made ahead on cgroup_worker_ (engine/execution/run_cgroups.h).
  RunCgroups run_cgroups_;
  bool warm_ = false;
  bool shutting_down_ = false;
  std::optional<sandbox::ProbeResult> probe_;
  bool probe_running_ = false;
  std::vector<std::function<void()>> probe_waiters_;
  Sessions sessions_;
};

// The key of a zygote in the pool: the interpreter, plus the environment and what it pre-imports
// (core_environments.cpp).
std::string zygote_key(const Interpreter& interpreter, const EnvResult* env);

// "native", "none (unsandboxed)", "docker": the label results and reports carry.
std::string sandbox_label(sandbox::Backend backend);

// Assembling check_environment's report from the engine's parts (environment_report.cpp).
struct EnvironmentParts {
  const EngineConfig& config;
  const InterpreterCatalog& catalog;
  const ZygotePool& pool;
  const Scheduler& scheduler;
  const sandbox::CgroupSetup& cgroups;
  const std::optional<sandbox::ProbeResult>& probe;
  const DockerBackend* docker;
  const RunNetwork& network;
  const sandbox::RunScoping& scoping;
  const std::string& user_quotas;
};
// Everything but `environments` (which the environments' own worker reports).
EnvironmentReport describe_environment(const EnvironmentParts& parts);

}  // namespace engine
