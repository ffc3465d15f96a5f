// One session: the steps whose state is kept (StepHistory), the links to the processes holding
// them, and the step running now. A step is an Execution (engine/execution/) launched into the
// head's process instead of a zygote; when it ends, the session advances (the step's process now
// holds the new state) or stays where it was (timeout, cancel, crash: the head is untouched), and
// says which in the StepReport. It reports upward through callbacks and knows nothing of queues.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/execution/execution.h"
#include "engine/files/work_files.h"
#include "engine/run.h"
#include "engine/sessions/holder_link.h"
#include "engine/sessions/session_sandbox.h"
#include "engine/sessions/step_history.h"

namespace engine {

class Session : public std::enable_shared_from_this<Session> {
 public:
  struct StepParams {
    std::uint64_t job_id = 0;
    std::string script;
    int timeout_seconds = 30;
    std::uint32_t cpu_seconds = 0;  // the step's CPU budget
    std::optional<FilesRequest> files;
    Execution::Config execution;    // (its cgroups are the sandbox's: none of its own)
    // How the step ended, as its result will say: a step that hit a limit is not kept (its
    // state may be half-built), even when its process survived (MemoryError under RLIMIT_DATA).
    std::function<EndReason(RunEvidence)> end_reason;
  };
  using StepDone = std::function<void(RunEvidence evidence, StepReport report)>;

  Session(asio::io_context& io, std::string id, std::shared_ptr<SessionSandbox> sandbox, std::size_t keep);
  // A new session continuing from `from`'s `step` (checked with can_fork), sharing its sandbox.
  Session(asio::io_context& io, std::string id, const Session& from, std::uint64_t step);

  const std::string& id() const { return id_; }
  const std::shared_ptr<SessionSandbox>& sandbox() const { return sandbox_; }
  const StepHistory& history() const { return history_; }
  bool busy() const { return running_ != nullptr; }
  bool snapshots_on() const;
  const std::string& forked_from() const { return forked_from_; }
  std::uint64_t steps_run() const { return steps_run_; }

  // Runs the next step from the head; `done` once, with the run's evidence (its cgroup counters
  // are the sandbox's, as deltas over the step) and what became of the session.
  void run_step(StepParams params, StepDone done);
  void cancel_step();  // the caller no longer wants it: killed, answered as cancelled
  void stop_step();    // the server stops: killed and answered at once
  // Asks the head for the next step's process, forked ahead (a spare), unless a step is under
  // way or the head has threads, once what the caller has posted (an answer: a new session's, a
  // step's) has been written. The server alone asks: then, and when the head changes (a rewind,
  // a fork, a lost state).
  void prepare_head_after_answer();

  // "" when `step` can be forked, else why not.
  std::string can_fork(std::uint64_t step) const;
  // Rewinds to `step`; "" or why not.
  std::string reset(std::uint64_t step);
  // A process of the sandbox is gone: the steps it held are forgotten.
  void holder_gone(std::uint64_t holder_id);
  // Every state it held is gone and no step is under way to make a new one: it cannot go on.
  bool states_lost() const { return history_.empty() && running_ == nullptr; }
  // Lets go of every process this session holds (the sandbox itself is its owner's to close), for
  // `why`. A step under way is answered as cancelled or, when the sandbox ended under it
  // (`ended`), as failed for that reason; either way its result says the session ended.
  void release(const std::string& why, bool ended = false);

 private:
  struct Running;
  void prepare_head();  // prepare_head_after_answer, at once
  std::shared_ptr<HolderLink> holder(StepHistory::Handle handle) const;
  // Takes the holders of steps no longer kept out of the session; each process goes with its
  // last user (a fork of this session may share it) when the returned links are dropped.
  std::vector<std::shared_ptr<HolderLink>> adopt(const std::vector<StepHistory::Handle>& released);
  void finish_step(const std::shared_ptr<Running>& running, RunEvidence evidence);
  std::string take_note();

  asio::io_context& io_;
  std::string id_;
  std::shared_ptr<SessionSandbox> sandbox_;
  std::size_t keep_ = 8;
  StepHistory history_;
  std::map<StepHistory::Handle, std::shared_ptr<HolderLink>> holders_;
  std::shared_ptr<Running> running_;
  std::string released_;  // why the session was let go (release); "" while it lives
  std::string forked_from_;
  std::string pending_note_;  // what happened while idle, for the next result
  std::uint64_t steps_run_ = 0;
};

}  // namespace engine
