// The server's side of one process holding a session's state (engine/zygote/session_holder.h):
// its control socket, read on the io_context, and its pidfd, by which it is watched and killed.
// Everything that arrives is untrusted (the process runs the session's code): it is decoded
// with bounds, routed upward by the sandbox, and a process that floods the socket with invalid
// messages or closes it is let go. Destroying the link kills the process. A holder's spare (a
// child forked ahead, HOLDER_SPARE) is the link's too: a step not run in place goes to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/zygote/protocol.h"
#include "sandbox/unique_fd.h"

namespace engine {

class HolderLink : public std::enable_shared_from_this<HolderLink> {
 public:
  struct Events {
    std::function<void(const zygote::HolderReadyMessage&)> ready;
    std::function<void(const zygote::StepStartedMessage&, sandbox::UniqueFd pidfd)> started;
    std::function<void(const zygote::StepExitedMessage&)> exited;
    std::function<void()> gone;  // its process exited, or its socket closed: called once
  };

  // `id`: the step id the process was started for (0: a sandbox's root).
  HolderLink(asio::io_context& io, std::uint64_t id, sandbox::UniqueFd socket);
  ~HolderLink();
  HolderLink(const HolderLink&) = delete;
  HolderLink& operator=(const HolderLink&) = delete;

  // Events from now on; a link whose socket the event loop could not watch is gone at once
  // (posted), with failure() saying why.
  void start(Events events);
  const std::string& failure() const { return failure_; }
  // The process's pidfd (from its parent's STEP_STARTED): watched for its exit from now on.
  void set_pidfd(sandbox::UniqueFd pidfd);
  // A duplicate of the pidfd (invalid when unknown), for an Execution to kill a step with.
  sandbox::UniqueFd dup_pidfd();

  // False when it cannot be sent (the process is gone, or not reading its socket). A step run in
  // place changes the state this process holds: its spare, forked before, is let go.
  bool send_step(const zygote::StepMessage& step, std::span<const int> fds);
  // A step (not in place) sent to this holder's spare: the spare is the step's process from now
  // on; its pid and pidfd. Nullopt when there is no spare, or it cannot take the step.
  struct Taken {
    pid_t pid = 0;
    sandbox::UniqueFd pidfd;
  };
  std::optional<Taken> send_step_to_spare(const zygote::StepMessage& step, std::span<const int> fds);
  bool has_spare() const { return spare_.has_value(); }
  // Lets its spare go (killed): once this process is no longer a head, a spare only costs memory.
  void drop_spare();
  // Asks for a spare, unless the link has one or one is on its way.
  void prepare();
  bool spare_coming() const { return spare_coming_; }
  // Calls `then` (posted) once the spare PREPARE asked for has arrived, or the holder said it
  // has none, or kSpareWait passed, or the process is gone; at once (posted) if none is awaited.
  void when_spare_known(std::function<void()> then);
  static constexpr std::chrono::milliseconds kSpareWait{100};
  // Kills the process and stops listening. Idempotent.
  void release();

  std::uint64_t id() const { return id_; }
  bool alive() const { return !gone_; }
  std::uint32_t tasks() const { return tasks_; }
  void set_tasks(std::uint32_t tasks) { tasks_ = tasks; }
  bool ready() const { return ready_; }
  void set_ready() { ready_ = true; }

 private:
  void wait_readable();
  void on_readable();
  void watch_exit();
  void lose();
  void on_spare(const zygote::HolderSpareMessage& spare, std::vector<sandbox::UniqueFd> fds);
  void spare_known();  // the awaited spare came, or will not: the waiters go on

  struct Spare {
    pid_t pid = 0;
    sandbox::UniqueFd link;
    sandbox::UniqueFd pidfd;
  };

  asio::io_context& io_;
  std::uint64_t id_;
  asio::posix::stream_descriptor socket_;
  asio::posix::stream_descriptor pidfd_;
  Events events_;
  std::optional<Spare> spare_;                   // not sent a step yet
  bool spare_coming_ = false;                    // PREPARE sent, no answer yet
  std::vector<std::function<void()>> spare_waiters_;
  asio::steady_timer spare_timer_;
  std::map<pid_t, std::uint64_t> spare_steps_;  // spares that took a step -> its id (until they die)
  std::uint32_t in_place_steps_ = 0;            // sent so far (HolderSpareMessage::generation)
  std::uint32_t tasks_ = 1;
  bool ready_ = false;
  bool gone_ = false;
  std::string failure_;  // why its socket is not watched; "" = it is
  unsigned bad_messages_ = 0;
};

}  // namespace engine
