// The server's link to a process holding a session's state: its process counts as gone only when
// it has really exited. asio can complete a wait on a descriptor that is not ready: when a handler
// closes one descriptor whose readiness is already queued and registers another, the new one can
// inherit the closed one's reactor state and be woken with its events.
#include "engine/event_loop.h"  // first: see there

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "engine/sessions/holder_link.h"
#include "sandbox/unique_fd.h"

using sandbox::UniqueFd;

namespace {

// A child that waits until it is killed, and its pidfd.
struct Sleeper {
  pid_t pid = -1;
  UniqueFd pidfd;
  Sleeper() {
    pid = ::fork();
    if (pid == 0) {
      for (;;) ::pause();
    }
    REQUIRE(pid > 0);
    pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    REQUIRE(pidfd);
  }
  ~Sleeper() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  bool alive() const { return ::waitpid(pid, nullptr, WNOHANG) == 0; }
};

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

}  // namespace

TEST_CASE("a holder link is not lost on a wake-up of its pidfd that is not its process's exit", "[sessions]") {
  asio::io_context io;
  Sleeper process;
  auto [server_end, process_end] = socket_pair();
  auto link = std::make_shared<engine::HolderLink>(io, 7, std::move(server_end));
  bool gone = false;
  engine::HolderLink::Events events;
  events.gone = [&gone] { gone = true; };
  link->start(std::move(events));

  // Two descriptors become ready in one turn of the loop: the first one's handler closes the
  // second (its readiness already taken from the kernel) and hands the link its pidfd, so the
  // pidfd's wait is registered where the closed descriptor's was.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  UniqueFd pipe_write(p[1]);
  asio::posix::stream_descriptor closed_early(io, p[0]);
  auto [trigger_read, trigger_write] = socket_pair();
  asio::posix::stream_descriptor trigger(io, trigger_read.release());
  bool triggered = false;
  trigger.async_wait(asio::posix::stream_descriptor::wait_read, [&](const std::error_code& ec) {
    REQUIRE_FALSE(ec);
    triggered = true;
    closed_early.close();
    link->set_pidfd(UniqueFd(::fcntl(process.pidfd.get(), F_DUPFD_CLOEXEC, 3)));
  });
  REQUIRE(::write(trigger_write.get(), "x", 1) == 1);
  REQUIRE(::write(pipe_write.get(), "x", 1) == 1);
  io.run_for(std::chrono::milliseconds(200));
  REQUIRE(triggered);
  CHECK(process.alive());
  CHECK_FALSE(gone);
  CHECK(link->alive());

  // Its real exit is seen.
  ::kill(process.pid, SIGKILL);
  io.restart();
  for (int i = 0; i < 100 && !gone; ++i) io.run_for(std::chrono::milliseconds(20));
  CHECK(gone);
  CHECK_FALSE(link->alive());
}
