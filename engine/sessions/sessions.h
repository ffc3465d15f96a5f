// The server's sessions: creating one (a sandbox started in the zygote of its environment), finding
// one for its owner, forking, rewinding, closing, listing, and closing those idle past
// --session-idle-seconds. The rules are SessionTable's and StepHistory's (pure, unit-tested);
// this class applies them to live sandboxes. Everything runs on the io_context.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/run.h"
#include "engine/event_loop.h"
#include "engine/sessions/session.h"
#include "engine/sessions/session_sandbox.h"
#include "engine/sessions/session_table.h"

namespace engine {

class Sessions {
 public:
  struct Config {
    unsigned max_sessions = 8;
    unsigned idle_seconds = 900;
    unsigned snapshots = 8;
    SessionSandbox::Config sandbox;
    // Whether a step of the session is asked for but not started yet (waiting for a run slot,
    // or for the session's step under way): such a session is in use, never idle.
    std::function<bool(const std::string& id)> step_waiting;
  };

  Sessions(asio::io_context& io, Config config);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // Room for one more session (counting those being created)? Else the error naming the flag.
  std::optional<std::string> capacity_error() const;
  // A creation is under way (counted by capacity_error) until create() answers or it is dropped.
  void reserve() { ++creating_; }
  void unreserve() {
    if (creating_ > 0) --creating_;
  }

  // Starts a sandbox in `zygote` for `owner` (after reserve()); `done` once it is ready or failed.
  void create(std::uint64_t run_id, std::string owner, const std::shared_ptr<ZygoteProcess>& zygote,
              Interpreter interpreter, std::vector<std::string> dependencies, std::shared_ptr<void> lease,
              std::function<void(SessionReply)> done);

  // The session `id` of `owner`, or nullptr with `error` (unknown to this owner, or ended).
  std::shared_ptr<Session> find(const std::string& owner, const std::string& id, std::string& error);
  // A step of the session starts or ends (a busy session is never idle).
  void set_busy(const std::string& id, bool busy);

  SessionReply fork(const std::string& owner, const std::string& id, std::optional<std::uint64_t> step);
  SessionReply reset(const std::string& owner, const std::string& id, std::uint64_t step);
  SessionReply close(const std::string& owner, const std::string& id);
  // The owner is gone for good: its sessions close, and those it is creating close when ready.
  void close_sessions_of(const std::string& owner, const std::string& why);
  SessionList list(const std::string& owner);
  // What the sandbox interpreter of `id` is, for its steps.
  SessionInfo info(const std::string& id);

  // Ends every session (the server stops).
  void shutdown();
  std::size_t size() const { return table_.size(); }

 private:
  void adopt(const std::string& id, std::string owner, std::shared_ptr<Session> session);
  void wire(const std::shared_ptr<SessionSandbox>& sandbox);
  // `ended`: its sandbox ended under it (not closed by anyone).
  void close_session(const std::string& id, const std::string& why, bool ended = false);
  void forget_ended(const std::string& id, std::string owner, std::string why);
  // Ends a session none of whose states is left (Session::states_lost).
  void end_lost(const std::string& id, std::string owner);
  // A creation for `owner` is answered: why its owner is gone meanwhile, if it is.
  std::optional<std::string> creation_answered(const std::string& owner);
  void schedule_expiry();

  asio::io_context& io_;
  Config config_;
  SessionTable<std::shared_ptr<Session>> table_;
  unsigned creating_ = 0;
  // Sessions that ended on their own (sandbox gone): their owner is told why, once.
  struct Ended {
    std::string owner;
    std::string why;
  };
  std::map<std::string, Ended> ended_;
  // Owners with a sandbox starting (create() to its answer), and those of them that are gone.
  std::multiset<std::string> creating_for_;
  std::map<std::string, std::string> gone_owners_;  // -> why
  std::deque<std::string> ended_order_;
  asio::steady_timer expiry_timer_;
  bool stopping_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace engine
