// The core's part for sessions (engine/sessions/): create_session is a job like a run (its
// interpreter resolved, its dependencies installed off the queue's slots, its zygote warmed) that
// ends in a session sandbox instead of an Execution; a step is a job for a session's head, which
// waits without a slot while the session is busy. The other session calls answer at once.
#include "engine/event_loop.h"  // first: see there
#include "engine/core.h"

#include <algorithm>
#include <set>

#include "engine/packaging/pep508.h"
#include "engine/packaging/script_metadata.h"

namespace engine {
namespace {

void post_reply(asio::io_context& io, Engine::SessionFn done, SessionReply reply) {
  asio::post(io, [done = std::move(done), reply = std::move(reply)]() mutable { done(std::move(reply)); });
}

// A step runs in its session's environment: what it declares (PEP 723 block, `dependencies`)
// must be among what the session was created with. nullopt when it is.
std::optional<std::string> step_requirements_error(const std::vector<Requirement>& wanted,
                                                   const std::vector<std::string>& session_dependencies) {
  std::set<std::string> have;
  for (const auto& text : session_dependencies) {
    if (auto r = parse_requirement(text, nullptr)) have.insert(r->normalized_name);
  }
  std::string missing;
  for (const auto& r : wanted) {
    if (have.count(r.normalized_name) == 0) missing += (missing.empty() ? "" : ", ") + r.name;
  }
  if (missing.empty()) return std::nullopt;
  return "this session's environment has no " + missing +
         ": a session's packages are fixed when it is created (create_session with dependencies=[...])";
}

}  // namespace

std::uint64_t Core::create_session(SessionRequest request, Engine::ProgressFn progress, Engine::SessionFn done) {
  if (shutting_down_) {
    SessionReply reply;
    reply.error = "the server is shutting down";
    post_reply(io_, std::move(done), std::move(reply));
    return 0;
  }
  if (auto full = sessions_.capacity_error()) {
    SessionReply reply;
    reply.error = *full;
    reply.refused = true;
    post_reply(io_, std::move(done), std::move(reply));
    return 0;
  }
  sessions_.reserve();
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  job->kind = Job::Kind::create;
  job->request.owner = std::move(request.owner);
  job->request.client = std::move(request.client);
  job->request.dependencies = std::move(request.dependencies);
  job->request.python_version = std::move(request.python_version);
  job->request.timeout_seconds = config_.max_timeout_seconds;
  job->progress = std::move(progress);
  job->created = std::move(done);
  jobs_[job->id] = job;
  scheduler_.enqueue(job->id, job->request.client);
  startup_.begin(false);
  pump();
  return job->id;
}

void Core::dispatch_create(const std::shared_ptr<Job>& job, const std::shared_ptr<ZygoteProcess>& zygote) {
  if (!job->interpreter->shared()) {
    refuse(job,
           "sessions need an interpreter with a shared libpython (Python " + job->interpreter->version +
               " at " + job->interpreter->executable + " has none: each of its runs starts afresh)",
           true);
    return;
  }
  job->stage = Job::Stage::running;
  std::shared_ptr<void> lease = job->env ? std::shared_ptr<void>(job->env->lease) : nullptr;
  std::weak_ptr<Core> weak = weak_from_this();
  sessions_.create(job->id, job->request.owner, zygote, *job->interpreter, job->request.dependencies, std::move(lease),
                   [weak, job](SessionReply reply) {
                     auto self = weak.lock();
                     if (!self) return;
                     if (job->stage == Job::Stage::answered) {  // cancelled while it was made
                       if (reply.session) self->sessions_.close(job->request.owner, reply.session->id);
                       return;
                     }
                     job->stage = Job::Stage::answered;
                     self->jobs_.erase(job->id);
                     self->scheduler_.finished(job->id);
                     if (auto done = std::move(job->created)) done(std::move(reply));
                     asio::post(self->io_, [weak] {
                       if (auto core = weak.lock()) core->pump();
                     });
                   });
}

bool Core::answer_create_failure(const std::shared_ptr<Job>& job, const RunEvidence& evidence) {
  if (job->kind != Job::Kind::create) return false;
  const bool ran = job->stage == Job::Stage::running;
  job->stage = Job::Stage::answered;
  jobs_.erase(job->id);
  scheduler_.finished(job->id);
  if (!ran) sessions_.unreserve();  // else Sessions::create does, when its sandbox has started or failed
  SessionReply reply;
  if (evidence.install_error) {
    reply.error = "the session's dependencies cannot be installed:\n" + *evidence.install_error;
  } else if (evidence.service_error) {
    reply.error = *evidence.service_error;
    reply.refused = evidence.refused;
  } else {
    reply.error = evidence.cancelled ? "cancelled" : "the session could not be created";
  }
  if (auto done = std::move(job->created)) post_reply(io_, std::move(done), std::move(reply));
  if (ran) {
    std::weak_ptr<Core> weak = weak_from_this();
    asio::post(io_, [weak] {
      if (auto self = weak.lock()) self->pump();
    });
  }
  return true;
}

Scheduler::Step Core::step_in_session(const std::shared_ptr<Job>& job) {
  std::string error;
  auto session = sessions_.find(job->request.owner, *job->request.session_id, error);
  if (!session) {
    refuse(job, error, true);
    return Step::dropped;
  }
  if (session->busy()) return Step::waiting;  // its place kept, no slot held
  const auto& sandbox = session->sandbox();
  job->interpreter = sandbox->interpreter();
  if (job->request.python_version && *job->request.python_version != job->interpreter->major_minor) {
    refuse(job,
           "this session runs Python " + job->interpreter->major_minor + ", not " + *job->request.python_version +
               " (a session's interpreter is chosen when it is created)",
           true);
    return Step::dropped;
  }
  MarkerEnvironment markers = job->interpreter->markers;
  if (markers.python_full_version.empty()) {
    markers.python_version = job->interpreter->major_minor;
    markers.python_full_version = job->interpreter->version;
  }
  const auto validation = validate_script(job->request.script, job->request.dependencies, markers);
  if (!validation.valid) {
    std::string message;
    for (const auto& e : validation.errors) message += (message.empty() ? "" : "; ") + e;
    refuse(job, "the script cannot run: " + message, true);
    return Step::dropped;
  }
  if (auto why = step_requirements_error(validation.dependencies, sandbox->dependencies())) {
    refuse(job, "the script cannot run in this session: " + *why, true);
    return Step::dropped;
  }
  job->stage = Job::Stage::running;
  job->session = session;
  job->zygote_python_version = sandbox->python_version();
  Session::StepParams params;
  params.job_id = job->id;
  params.script = job->request.script;
  params.timeout_seconds = std::max(1, job->request.timeout_seconds);
  params.cpu_seconds = config_.policy.limits.cpu_seconds != 0 ? config_.policy.limits.cpu_seconds
                                                              : static_cast<std::uint32_t>(params.timeout_seconds);
  params.files = files_request(job->request);
  params.execution = execution_config(false);  // the sandbox's cgroup counts the step
  const std::string id = session->id();
  sessions_.set_busy(id, true);
  std::weak_ptr<Core> weak = weak_from_this();
  // The step's end as its result will say it (a limit inferred without a cgroup included).
  params.end_reason = [weak, job](RunEvidence evidence) {
    auto self = weak.lock();
    if (!self) return EndReason::exit;
    self->complete_evidence(*job, evidence);
    return decide_outcome(std::move(evidence)).end_reason;
  };
  session->run_step(std::move(params), [weak, job, id](RunEvidence evidence, StepReport report) {
    auto self = weak.lock();
    if (!self) return;
    self->sessions_.set_busy(id, false);
    job->step_report = std::move(report);
    self->answer(job, std::move(evidence));
  });
  return Step::started;
}

bool Core::step_waiting(const std::string& id) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&id](const auto& entry) {
    const Job& job = *entry.second;
    return job.kind == Job::Kind::step && job.stage != Job::Stage::running && job.stage != Job::Stage::answered &&
           job.request.session_id == id;
  });
}

void Core::fork_session(const std::string& owner, const std::string& id, std::optional<std::uint64_t> step,
                        Engine::SessionFn done) {
  post_reply(io_, std::move(done), sessions_.fork(owner, id, step));
}

void Core::reset_session(const std::string& owner, const std::string& id, std::uint64_t step, Engine::SessionFn done) {
  post_reply(io_, std::move(done), sessions_.reset(owner, id, step));
}

void Core::close_session(const std::string& owner, const std::string& id, Engine::SessionFn done) {
  post_reply(io_, std::move(done), sessions_.close(owner, id));
}

void Core::list_sessions(const std::string& owner, std::function<void(SessionList)> done) {
  asio::post(io_, [done = std::move(done), list = sessions_.list(owner)]() mutable { done(std::move(list)); });
}

void Core::close_sessions_of(const std::string& owner, const std::string& why) {
  // Creations still queued or installing are cancelled; one whose sandbox is starting is closed
  // by Sessions when it is ready.
  std::vector<std::uint64_t> queued;
  for (const auto& [id, job] : jobs_) {
    if (job->kind == Job::Kind::create && job->request.owner == owner && job->stage != Job::Stage::running &&
        job->stage != Job::Stage::answered) {
      queued.push_back(id);
    }
  }
  for (const auto id : queued) cancel(id);
  sessions_.close_sessions_of(owner, why);
}

}  // namespace engine
