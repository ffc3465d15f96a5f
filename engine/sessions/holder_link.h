// The server's side of one process holding a session's state (engine/zygote/session_holder.h):
// its control socket, read on the io_context, and its pidfd, by which it is watched and killed.
// Everything that arrives is untrusted (the process runs the session's code): it is decoded
// with bounds, routed upward by the sandbox, and a process that floods the socket with invalid
// messages or closes it is let go. Destroying the link kills the process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

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

  void start(Events events);
  // The process's pidfd (from its parent's STEP_STARTED): watched for its exit from now on.
  void set_pidfd(sandbox::UniqueFd pidfd);
  // A duplicate of the pidfd (invalid when unknown), for an Execution to kill a step with.
  sandbox::UniqueFd dup_pidfd();

  // False when it cannot be sent (the process is gone, or not reading its socket).
  bool send_step(const zygote::StepMessage& step, std::span<const int> fds);
  void prepare();
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

  asio::io_context& io_;
  std::uint64_t id_;
  asio::posix::stream_descriptor socket_;
  asio::posix::stream_descriptor pidfd_;
  Events events_;
  std::uint32_t tasks_ = 1;
  bool ready_ = false;
  bool gone_ = false;
  unsigned bad_messages_ = 0;
};

}  // namespace engine
