// One session sandbox: a run of a zygote (kRunFlagSession) whose process does not end but holds
// the session's fresh interpreter (step 0), with its own namespaces, work dir, cgroup and limits.
// It owns the links to every process holding a state in it, routes their messages to the step
// waiting for them, and is shared by a session and the sessions forked from it (fork_session
// shares the sandbox: its processes are new, its memory its own, its work dir the same). When the
// last of them closes, close() kills everything in it (its init's pid namespace) and removes its
// cgroup.
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
#include "engine/interpreters/discovery.h"
#include "engine/pool/zygote_process.h"
#include "engine/sessions/holder_link.h"
#include "sandbox/cgroup.h"
#include "sandbox/unique_fd.h"

namespace engine {

class SessionSandbox : public std::enable_shared_from_this<SessionSandbox> {
 public:
  struct Config {
    const sandbox::CgroupSetup* cgroups = nullptr;
    sandbox::Limits limits;
    asio::any_io_executor cgroup_remover;
  };
  // What a step waits for (by its step id).
  struct StepWatch {
    std::function<void(pid_t pid, sandbox::UniqueFd pidfd)> started;
    std::function<void(const zygote::HolderReadyMessage&)> ready;  // on the step's own process
    std::function<void(const zygote::StepExitedMessage&)> exited;  // its process died
  };

  SessionSandbox(asio::io_context& io, std::uint64_t run_id, Interpreter interpreter,
                 std::vector<std::string> dependencies, std::shared_ptr<void> keep_alive, Config config);
  ~SessionSandbox();
  SessionSandbox(const SessionSandbox&) = delete;
  SessionSandbox& operator=(const SessionSandbox&) = delete;

  // Starts the sandbox in `zygote`; `ready` is called once: with "" when its root holds step 0,
  // else with why it could not start.
  void start(const std::shared_ptr<ZygoteProcess>& zygote, std::function<void(const std::string& error)> ready);

  // A new process link (a step's), registered under the step id it is started for.
  std::shared_ptr<HolderLink> add_holder(std::uint64_t step_id, sandbox::UniqueFd server_end);
  std::shared_ptr<HolderLink> root() const { return root_; }
  // The links it keeps track of: the root's, the live ones, and at most the last one let go.
  std::size_t links() const { return holders_.size(); }
  std::uint64_t next_step_id() { return next_step_id_++; }

  // Routes the messages about step `step_id` to `watch`; `in_place_holder`: the process that
  // runs it itself (none when the step has a process of its own).
  void watch_step(std::uint64_t step_id, std::optional<std::uint64_t> in_place_holder, StepWatch watch);
  void unwatch_step(std::uint64_t step_id);
  // Step `started.step_id`'s process runs, and this is its pidfd: from STEP_STARTED, or from the
  // server itself when it sent the step to a spare.
  void step_started(const zygote::StepStartedMessage& started, sandbox::UniqueFd pidfd);

  // Told when a process holding a state is gone (by its link's id), and when the sandbox ends.
  void on_holder_gone(std::function<void(std::uint64_t holder_id)> callback) { holder_gone_ = std::move(callback); }
  void on_ended(std::function<void(const std::string& why)> callback) { ended_ = std::move(callback); }

  // The memory its cgroup holds now, snapshots included (nullopt without a cgroup). One file read.
  std::optional<std::int64_t> memory_bytes() const;
  // Only its limit counters (limit hits, OOM kills, refused forks), from files held open: what a
  // step's result compares before and after it. Empty without a cgroup.
  std::optional<sandbox::CgroupStats> limit_counters() const;
  bool has_cgroup() const { return !cgroup_.empty(); }

  // Kills everything in the sandbox and removes its cgroup (off the loop). Idempotent.
  void close(const std::string& why);
  bool ended() const { return ended_flag_; }
  const std::string& end_reason() const { return end_reason_; }

  const Interpreter& interpreter() const { return interpreter_; }
  const std::vector<std::string>& dependencies() const { return dependencies_; }
  const std::string& python_version() const { return python_version_; }
  std::chrono::steady_clock::time_point created() const { return created_; }

 private:
  struct Watched {
    std::optional<std::uint64_t> in_place_holder;
    StepWatch watch;
  };
  void wire(const std::shared_ptr<HolderLink>& link);
  void on_ready(const std::shared_ptr<HolderLink>& link, const zygote::HolderReadyMessage& ready);
  void on_exited(const zygote::StepExitedMessage& exited);
  void on_gone(std::uint64_t holder_id);
  void end(const std::string& why);

  asio::io_context& io_;
  std::uint64_t run_id_;
  Interpreter interpreter_;
  std::vector<std::string> dependencies_;
  std::shared_ptr<void> keep_alive_;  // the environment's lease
  Config config_;
  std::shared_ptr<ZygoteProcess> zygote_;
  sandbox::UniqueFd init_pidfd_;
  sandbox::RunCgroup cgroup_;
  sandbox::CgroupCounters counters_;
  std::shared_ptr<HolderLink> root_;
  std::map<std::uint64_t, std::weak_ptr<HolderLink>> holders_;  // by the step id they started for
  std::map<std::uint64_t, Watched> steps_;
  std::function<void(const std::string&)> ready_;
  std::function<void(std::uint64_t)> holder_gone_;
  std::function<void(const std::string&)> ended_;
  asio::steady_timer start_timer_;
  std::uint64_t next_step_id_ = 1;
  std::string python_version_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  bool ended_flag_ = false;
  std::shared_ptr<bool> closed_ = std::make_shared<bool>(false);  // outlives this, for late news
  std::string end_reason_;
};

}  // namespace engine
