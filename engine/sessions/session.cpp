#include "engine/event_loop.h"  // first: see there
#include "engine/sessions/session.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <utility>

namespace engine {
namespace {

using sandbox::UniqueFd;

// The wait status a step's own report stands for: its exit code, or -N for signal N.
int wait_status_of(std::int32_t code) { return code >= 0 ? (code & 0xFF) << 8 : ((-code) & 0x7F); }

std::uint64_t delta(std::uint64_t after, std::uint64_t before) { return after >= before ? after - before : 0; }

// A limit a step may hit and survive (a MemoryError under RLIMIT_DATA, a thread it could not
// start): its state may be half-built, so it is not kept.
bool survivable_limit(EndReason reason) {
  return reason == EndReason::memory_limit || reason == EndReason::process_limit;
}

std::string limit_text(EndReason reason) {
  return reason == EndReason::memory_limit ? "it hit the memory limit (--memory-limit-mb)"
                                           : "it hit the process limit (--max-processes)";
}

std::string why_not_kept(const RunEvidence& e) {
  if (e.service_error) return "it could not run (" + *e.service_error + ")";
  if (e.timed_out) return "it timed out";
  if (e.cancelled) return "it was cancelled";
  if (e.cgroup && e.cgroup->oom_kills > 0) return "it hit the memory limit (--memory-limit-mb)";
  if (e.exited) {
    const int status = e.exited->wait_status;
    if (WIFSIGNALED(status)) return "its process was killed by signal " + std::to_string(WTERMSIG(status));
    if (WIFEXITED(status)) {
      return "its process exited (status " + std::to_string(WEXITSTATUS(status)) + ") before the step ended";
    }
  }
  return "its process ended before the step did";
}

}  // namespace

struct Session::Running {
  std::uint64_t step_id = 0;
  std::uint64_t number = 0;
  bool in_place = false;
  bool started = false;               // its process runs (STARTED came, or it went to a spare)
  bool deferred = false;              // waiting for the head's spare, not started yet
  bool head_lost = false;             // that state's process ended while the step ran
  std::shared_ptr<HolderLink> head;   // the state it started from
  std::shared_ptr<HolderLink> child;  // its own process (none in place)
  std::shared_ptr<Execution> execution;
  std::optional<zygote::HolderReadyMessage> ready;  // it ended normally: its process holds the new state
  std::optional<sandbox::CgroupStats> before;
  std::function<EndReason(RunEvidence)> end_reason;
  StepDone done;
};

Session::Session(asio::io_context& io, std::string id, std::shared_ptr<SessionSandbox> sandbox, std::size_t keep)
    : io_(io), id_(std::move(id)), sandbox_(std::move(sandbox)), keep_(keep), history_(0) {
  holders_[0] = sandbox_->root();
}

Session::Session(asio::io_context& io, std::string id, const Session& from, std::uint64_t step)
    : io_(io),
      id_(std::move(id)),
      sandbox_(from.sandbox_),
      keep_(from.keep_),
      history_(from.history_.fork_at(step)),
      forked_from_(from.id_ + " at step " + std::to_string(step)) {
  for (const auto handle : history_.handles()) {
    if (auto h = from.holder(handle)) holders_[handle] = h;
  }
  prepare_head();
}

std::shared_ptr<HolderLink> Session::holder(StepHistory::Handle handle) const {
  const auto it = holders_.find(handle);
  return it == holders_.end() ? nullptr : it->second;
}

void Session::prepare_head() {
  if (running_) return;  // (a step came meanwhile: it has its process)
  if (auto head = holder(history_.head_handle()); head != nullptr && head->tasks() <= 1) head->prepare();
}

void Session::prepare_head_after_answer() {
  asio::post(io_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->prepare_head();
  });
}

bool Session::snapshots_on() const {
  const auto head = holder(history_.head_handle());
  return head == nullptr || head->tasks() <= 1;
}

void Session::run_step(StepParams params, StepDone done) {
  auto running = std::make_shared<Running>();
  running->done = std::move(done);
  running->end_reason = std::move(params.end_reason);
  auto fail_now = [&](const std::string& why) {
    RunEvidence evidence;
    evidence.service_error = why;
    StepReport report{id_, history_.head(), false, snapshots_on(), take_note()};
    auto callback = std::move(running->done);
    asio::post(io_, [callback = std::move(callback), evidence = std::move(evidence), report]() mutable {
      callback(std::move(evidence), std::move(report));
    });
  };
  // A state whose process ended as its own step was being answered is let go now, as it would
  // have been had it ended while the session was idle: the step runs from the latest kept state.
  if (auto lost = holder(history_.head_handle()); lost && !lost->alive()) holder_gone(lost->id());
  auto head = holder(history_.head_handle());
  if (sandbox_->ended()) return fail_now("the session ended: " + sandbox_->end_reason());
  if (!head || !head->alive()) return fail_now("the session's state at step " + std::to_string(history_.head()) + " is gone");
  running->head = head;
  running->in_place = head->tasks() > 1;
  running->step_id = sandbox_->next_step_id();
  running->number = history_.next_step();
  auto child_end = std::make_shared<UniqueFd>();
  if (!running->in_place) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return fail_now("cannot create the step's control socket");
    }
    running->child = sandbox_->add_holder(running->step_id, UniqueFd(sv[0]));
    child_end->reset(sv[1]);
  }
  running->before = sandbox_->limit_counters();
  running_ = running;

  std::weak_ptr<Session> weak = weak_from_this();
  running->execution = std::make_shared<Execution>(io_, params.job_id, params.execution, [weak, running](RunEvidence e) {
    if (auto self = weak.lock()) {
      self->finish_step(running, std::move(e));
    } else if (running->done) {
      running->done(std::move(e), StepReport{});
    }
  });
  std::weak_ptr<SessionSandbox> weak_box = sandbox_;
  const zygote::StepMessage message{running->step_id, running->number, params.cpu_seconds, 0};
  Execution::Launch launch = [weak_box, running, child_end, message](std::vector<int> fds, bool files,
                                                                       ZygoteProcess::RunCallbacks callbacks,
                                                                       std::string& why) {
    auto box = weak_box.lock();
    if (!box || box->ended()) {
      why = "the session ended" + (box ? ": " + box->end_reason() : std::string());
      return false;
    }
    std::vector<int> step_fds(fds.begin(), fds.begin() + zygote::StepMessage::kBaseFds);
    if (!running->in_place) step_fds.push_back(child_end->get());
    if (files) step_fds.push_back(fds[zygote::StepMessage::kBaseFds]);
    zygote::StepMessage step = message;
    step.flags = (running->in_place ? zygote::kStepInPlace : 0u) | (files ? zygote::kStepFiles : 0u);
    std::weak_ptr<Running> weak_running = running;
    SessionSandbox::StepWatch watch;
    watch.started = [weak_running, started = callbacks.started](pid_t pid, UniqueFd pidfd) {
      if (auto r = weak_running.lock()) r->started = true;
      if (started) started(pid, std::move(pidfd));
    };
    watch.ready = [weak_running, exited = callbacks.exited](const zygote::HolderReadyMessage& ready) {
      auto r = weak_running.lock();
      if (!r || r->ready) return;
      r->ready = ready;
      zygote::ExitedMessage e;
      e.run_id = ready.step_id;
      e.wait_status = wait_status_of(ready.exit_code);
      e.user_cpu_us = ready.user_cpu_us;
      e.system_cpu_us = ready.system_cpu_us;
      e.max_rss_kb = ready.max_rss_kb;
      if (exited) exited(e);
    };
    watch.exited = [weak_running, exited = callbacks.exited](const zygote::StepExitedMessage& m) {
      auto r = weak_running.lock();
      if (!r || r->ready) return;  // it finished its step: a later death is a lost snapshot
      zygote::ExitedMessage e;
      e.run_id = m.step_id;
      e.wait_status = m.wait_status;
      e.user_cpu_us = m.user_cpu_us;
      e.system_cpu_us = m.system_cpu_us;
      e.max_rss_kb = m.max_rss_kb;
      if (exited) exited(e);
    };
    const auto in_place_holder = running->in_place ? std::optional(running->head->id()) : std::nullopt;
    box->watch_step(running->step_id, in_place_holder, std::move(watch));
    // To the head's spare, forked ahead: it is the step's process (and started, as of now). Else
    // to the head, which forks the step's process.
    if (auto spare = running->head->send_step_to_spare(step, step_fds)) {
      box->step_started(zygote::StepStartedMessage{step.step_id, spare->pid}, std::move(spare->pidfd));
    } else if (!running->head->send_step(step, step_fds)) {
      box->unwatch_step(running->step_id);
      why = "the session's process holding step " + std::to_string(running->number - 1) + " does not answer";
      return false;
    }
    child_end->reset();  // the step's process has its end now
    if (running->in_place && callbacks.started) callbacks.started(0, running->head->dup_pidfd());
    return true;
  };
  auto start = [running, launch = std::move(launch), script = std::move(params.script),
                timeout = static_cast<std::uint32_t>(std::max(1, params.timeout_seconds)),
                files = std::move(params.files)]() mutable {
    running->deferred = false;
    running->execution->start(std::move(launch), script, timeout, files ? &*files : nullptr);
  };
  if (running->in_place || !head->spare_coming()) return start();
  // A spare the head was asked for (after a rewind, a fork, a failed step) is on its way: the
  // step waits for it (a fork's time) rather than have the head fork a second process beside it.
  running->deferred = true;
  std::weak_ptr<Session> weak_session = weak_from_this();
  head->when_spare_known([weak_session, running, start = std::move(start)]() mutable {
    auto self = weak_session.lock();
    if (self && self->running_ == running && running->deferred) start();  // (else stopped meanwhile)
  });
}

void Session::cancel_step() {
  if (!running_ || !running_->execution) return;
  if (running_->deferred) {
    running_->execution->stop();  // not started: answered at once, as cancelled
  } else {
    running_->execution->cancel();
  }
}

void Session::stop_step() {
  if (running_ && running_->execution) running_->execution->stop();
}

void Session::finish_step(const std::shared_ptr<Running>& running, RunEvidence evidence) {
  if (running_ == running) running_.reset();
  sandbox_->unwatch_step(running->step_id);
  if (running->before) {
    if (const auto after = sandbox_->limit_counters()) {
      // The sandbox's limit counters over this step; its peak and CPU are the whole session's,
      // so the step's own (rusage) are used instead.
      sandbox::CgroupStats d;
      d.memory_limit_hits = delta(after->memory_limit_hits, running->before->memory_limit_hits);
      d.oom_kills = delta(after->oom_kills, running->before->oom_kills);
      d.pids_limit_hits = delta(after->pids_limit_hits, running->before->pids_limit_hits);
      evidence.cgroup = d;
    }
  }
  bool kept = running->ready && !evidence.timed_out && !evidence.cancelled && !evidence.service_error;
  std::optional<EndReason> limit;
  if (kept && !running->in_place && running->end_reason) {
    // (Run in place, the process is the session's only state: it is kept, whatever happened.)
    const EndReason reason = running->end_reason(evidence);
    if (survivable_limit(reason)) {
      kept = false;
      limit = reason;
    }
  }
  StepReport report;
  report.session_id = id_;
  report.kept = kept;
  std::string note = take_note();
  std::vector<std::shared_ptr<HolderLink>> retired;
  if (kept) {
    ++steps_run_;
    if (running->in_place) {
      history_.advance_in_place();
    } else {
      holders_[running->child->id()] = running->child;
      // (A spare it forked as the step went to it instead is no use to a snapshot.)
      running->head->drop_spare();
      retired = adopt(history_.advance(running->child->id(), keep_));
      if (running->head_lost) holder_gone(running->head->id());  // a snapshot now, not the head
    }
    report.step = history_.head();
    const auto head = holder(history_.head_handle());
    report.snapshots = head != nullptr && head->tasks() <= 1;
    if (!report.snapshots) {
      note += (note.empty() ? "" : " ") + std::string("the interpreter has ") +
              std::to_string(head->tasks() - 1) +
              " thread(s) running after this step: a process with threads cannot be forked safely, so "
              "snapshots are off (this step's state cannot be rewound to or forked, and the next steps "
              "run in place, with no way back if one fails) until the threads end";
    }
  } else {
    if (running->child) running->child->release();
    if (running->head_lost && !running->in_place) holder_gone(running->head->id());
    const std::string why = limit ? limit_text(*limit) : why_not_kept(evidence);
    if (running->in_place) {
      // The process that ran it was the session's state: it is gone with it.
      const std::uint64_t lost = history_.head();
      running->head->release();
      history_.forget(running->head->id());
      holders_.erase(running->head->id());
      note += (note.empty() ? "" : " ") + std::string("this step was not kept: ") + why +
              "; it ran in place (the interpreter had threads, so no snapshot was taken), so the state "
              "of step " + std::to_string(lost) + " went with it: the session continues from step " +
              std::to_string(history_.head()) + ", its latest snapshot";
    } else if (!released_.empty()) {
      note += (note.empty() ? "" : " ") + std::string("this step was not kept: the session ended (") + released_ + ")";
    } else if (history_.empty()) {
      note += (note.empty() ? "" : " ") + std::string("this step was not kept: ") + why +
              "; no state of the session is left (the processes holding them ended), so the session has ended";
    } else {
      note += (note.empty() ? "" : " ") + std::string("this step was not kept: ") + why +
              "; the session continues from step " + std::to_string(history_.head()) +
              (history_.head() + 1 == running->number ? ", as it was before the step" : ", its latest kept state");
    }
    report.step = history_.head();
    report.snapshots = snapshots_on();
  }
  if (std::string lost = take_note(); !lost.empty()) note += (note.empty() ? "" : " ") + lost;
  report.note = std::move(note);
  if (running->done) running->done(std::move(evidence), std::move(report));
  // After the answer has been written (it is posted first), the head forks the next step's
  // process ahead (a fork beside the answer would take the CPU it needs); then the snapshot
  // that fell out of --session-snapshots is killed (its exit, likewise).
  prepare_head_after_answer();
  if (!retired.empty()) asio::post(io_, [retired = std::move(retired)] {});
}

std::vector<std::shared_ptr<HolderLink>> Session::adopt(const std::vector<StepHistory::Handle>& released) {
  std::vector<std::shared_ptr<HolderLink>> out;
  for (const auto handle : released) {
    const auto it = holders_.find(handle);
    if (it == holders_.end()) continue;
    out.push_back(std::move(it->second));
    holders_.erase(it);
  }
  return out;
}

std::string Session::take_note() { return std::exchange(pending_note_, std::string()); }

std::string Session::can_fork(std::uint64_t step) const {
  if (!history_.has(step)) {
    return step > history_.head() ? "step " + std::to_string(step) + " does not exist (the latest is " +
                                        std::to_string(history_.head()) + ")"
                                  : "step " + std::to_string(step) + " is no longer kept (kept: " +
                                        history_.describe() + "; --session-snapshots sets how many)";
  }
  const auto h = holder(*history_.handle_of(step));
  if (!h || !h->alive()) return "the state of step " + std::to_string(step) + " is gone";
  if (h->tasks() > 1) {
    return "step " + std::to_string(step) + "'s interpreter runs threads, so it cannot be forked safely "
           "(snapshots are off since then); fork an earlier step";
  }
  return "";
}

std::string Session::reset(std::uint64_t step) {
  if (running_) {
    return "a step is running in this session; wait for its result or cancel it, then reset";
  }
  auto rewound = history_.rewind(step);
  if (!rewound.error.empty()) return rewound.error;
  adopt(rewound.released);
  prepare_head();  // the next step's process, ahead
  return "";
}

void Session::holder_gone(std::uint64_t holder_id) {
  if (!history_.holds(holder_id)) return;
  // The state a step was sent to: once the step's process is forked (or, in place, is this one),
  // the step reports its own end. Before that, nothing would: the step fails now.
  const bool step_waits = running_ && running_->head && running_->head->id() == holder_id;
  if (step_waits && (running_->in_place || running_->started)) {
    // (In place, the step's own process: its end is the step's. Otherwise the step reports its
    // end first; finish_step then lets the state go.)
    if (!running_->in_place) running_->head_lost = true;
    return;
  }
  const std::uint64_t head = history_.head();
  const auto kept_before = history_.kept();
  const auto new_head = history_.forget(holder_id);
  holders_.erase(holder_id);
  if (step_waits) {
    pending_note_ += (pending_note_.empty() ? "" : " ") + std::string("the state of step ") + std::to_string(head) +
                     " was lost (its process ended as the step arrived; the memory limit can do that).";
    if (running_->execution) {
      running_->execution->fail("the session's process holding step " + std::to_string(head) +
                                " ended before the step could start");
    }
    return;
  }
  std::string lost;
  for (const auto step : kept_before) {
    if (!history_.has(step)) lost += (lost.empty() ? "" : ", ") + std::to_string(step);
  }
  if (history_.empty()) {
    // Nothing left to continue from (a step of a session sharing its sandbox killed its
    // processes): the session ends (Sessions, told by states_lost()).
    return;
  }
  if (new_head) {
    pending_note_ += (pending_note_.empty() ? "" : " ") + std::string("the state of step ") + std::to_string(head) +
                     " was lost (its process ended; the memory limit can do "
                     "that): the session continued from step " + std::to_string(*new_head) + ".";
    prepare_head();
  } else if (!lost.empty()) {
    pending_note_ += (pending_note_.empty() ? "" : " ") + std::string("the snapshot of step ") + lost +
                     " was lost (its process ended).";
  }
}

void Session::release(const std::string& why, bool ended) {
  released_ = why.empty() ? "it was closed" : why;
  if (running_ && running_->execution) {
    if (ended) {
      running_->execution->fail("the session ended: " + why);
    } else {
      running_->execution->stop();
    }
  }
  holders_.clear();
}

}  // namespace engine
