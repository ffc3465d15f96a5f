// The server's link to a process holding a session's state: its process counts as gone only when
// it has really exited. asio can complete a wait on a descriptor that is not ready: when a handler
// closes one descriptor whose readiness is already queued and registers another, the new one can
// inherit the closed one's reactor state and be woken with its events.
#include "engine/event_loop.h"  // first: see there

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

namespace {

// A holder's end of a link, as the zygote's holder process would speak on it.
struct FakeHolder {
  UniqueFd end;
  void send(const engine::zygote::Message& message, std::span<const int> fds = {}) {
    REQUIRE(engine::zygote::send_message(end.get(), message, fds) == 0);
  }
  // The next message, waiting at most `ms`; nullopt when none came.
  std::optional<engine::zygote::Received> receive(int fd, int ms = 1000) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) != 1) return std::nullopt;
    return engine::zygote::receive_message(fd);
  }
};

void run_until(asio::io_context& io, const std::function<bool()>& done) {
  io.restart();
  for (int i = 0; i < 100 && !done(); ++i) io.run_for(std::chrono::milliseconds(10));
}

// A link to a fake holder, on a loop of its own.
struct Linked {
  asio::io_context io;
  FakeHolder holder;
  std::shared_ptr<engine::HolderLink> link;
  Linked() {
    auto [server_end, holder_end] = socket_pair();
    holder.end = std::move(holder_end);
    link = std::make_shared<engine::HolderLink>(io, 3, std::move(server_end));
  }
  // The holder hands `spare` to the server (its link's server end, and its pidfd).
  void hand_spare(const Sleeper& spare, const UniqueFd& spare_link, std::uint32_t generation = 0) {
    const int fds[] = {spare_link.get(), spare.pidfd.get()};
    holder.send(engine::zygote::HolderSpareMessage{spare.pid, generation}, fds);
  }
};

}  // namespace

TEST_CASE("a holder's spare takes the next step straight from the server", "[sessions]") {
  namespace z = engine::zygote;
  Linked l;
  auto& [io, holder, link] = l;
  std::vector<z::StepExitedMessage> exited;
  engine::HolderLink::Events events;
  events.exited = [&exited](const z::StepExitedMessage& e) { exited.push_back(e); };
  link->start(std::move(events));

  Sleeper spare;
  auto [spare_link_server, spare_link_spare] = socket_pair();
  SECTION("a step goes to it, and its death is reported as that step's") {
    l.hand_spare(spare, spare_link_server);
    spare_link_server.reset();
    run_until(io, [&] { return link->has_spare(); });
    REQUIRE(link->has_spare());

    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd a(p[0]), b(p[1]);
    const int step_fds[] = {a.get(), b.get(), a.get(), b.get(), a.get()};
    auto taken = link->send_step_to_spare(z::StepMessage{42, 5, 0, 0}, step_fds);
    REQUIRE(taken);
    CHECK(taken->pid == spare.pid);
    CHECK(taken->pidfd);
    CHECK_FALSE(link->has_spare());
    auto got = holder.receive(spare_link_spare.get());
    REQUIRE(got);
    REQUIRE(got->status == z::Received::Status::message);
    CHECK(std::get<z::StepMessage>(got->message).step_id == 42);
    CHECK(got->fds.size() == 5);
    // The holder hears of nothing: its spare is the server's.
    CHECK_FALSE(holder.receive(holder.end.get(), 50));

    // Its parent reports the spare's death by pid: it is step 42's process that died.
    holder.send(z::StepExitedMessage{0, SIGKILL, 1, 2, 3, spare.pid});
    run_until(io, [&] { return !exited.empty(); });
    REQUIRE(exited.size() == 1);
    CHECK(exited[0].step_id == 42);
    CHECK(exited[0].wait_status == SIGKILL);
    // A spare that never took a step is nobody's step.
    holder.send(z::StepExitedMessage{0, SIGKILL, 0, 0, 0, spare.pid + 1000});
    run_until(io, [] { return false; });
    CHECK(exited.size() == 1);
  }
  SECTION("a spare forked before a step run in place is refused, and killed") {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd a(p[0]), b(p[1]);
    const int step_fds[] = {a.get(), b.get(), a.get(), b.get()};
    REQUIRE(link->send_step(z::StepMessage{7, 1, 0, z::kStepInPlace}, step_fds));
    l.hand_spare(spare, spare_link_server, 0);  // generation 0: before that step
    run_until(io, [&] { return !spare.alive(); });
    CHECK_FALSE(spare.alive());
    CHECK_FALSE(link->has_spare());
  }
  SECTION("a forged spare (a process of the session may send anything) is refused") {
    // Its "pidfd" a socket whose peer the server would then hold, so that nothing ever drains
    // the "link": a step sent there blocked the server for good. Only a SEQPACKET link and a
    // pidfd make a spare.
    auto [x, y] = socket_pair();
    const int forged[] = {x.get(), y.get()};
    holder.send(z::HolderSpareMessage{spare.pid, 0}, forged);
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd a(p[0]), b(p[1]);
    const int pipe_as_link[] = {a.get(), spare.pidfd.get()};
    holder.send(z::HolderSpareMessage{spare.pid, 0}, pipe_as_link);
    run_until(io, [] { return false; });
    CHECK_FALSE(link->has_spare());
    // The real one is taken.
    l.hand_spare(spare, spare_link_server);
    run_until(io, [&] { return link->has_spare(); });
    CHECK(link->has_spare());
  }
  SECTION("a step is not waited for: a spare that does not read fails it, the server goes on") {
    l.hand_spare(spare, spare_link_server);
    run_until(io, [&] { return link->has_spare(); });
    REQUIRE(link->has_spare());
    // The spare's end of its link is full: nothing reads it. And the link blocks again: the
    // file description is shared, so whoever else holds it can clear O_NONBLOCK.
    while (z::send_message_now(spare_link_server.get(), z::PrepareMessage{}) == 0) {
    }
    REQUIRE(::fcntl(spare_link_server.get(), F_SETFL, 0) == 0);
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd a(p[0]), b(p[1]);
    const int step_fds[] = {a.get(), b.get(), a.get(), b.get(), a.get()};
    CHECK_FALSE(link->send_step_to_spare(z::StepMessage{43, 5, 0, 0}, step_fds));
  }
  SECTION("a spare let go of is killed") {
    l.hand_spare(spare, spare_link_server);
    run_until(io, [&] { return link->has_spare(); });
    REQUIRE(link->has_spare());
    link->drop_spare();
    CHECK_FALSE(link->has_spare());
    run_until(io, [&] { return !spare.alive(); });
    CHECK_FALSE(spare.alive());
  }
}

TEST_CASE("a step waits for the spare PREPARE asked for, and only while one is coming", "[sessions]") {
  namespace z = engine::zygote;
  Linked l;
  auto& [io, holder, link] = l;
  link->start({});
  int called = 0;

  // Nothing asked for: at once.
  link->when_spare_known([&] { ++called; });
  run_until(io, [&] { return called == 1; });
  CHECK(called == 1);

  link->prepare();
  link->prepare();  // (one PREPARE while one is coming)
  auto got = holder.receive(holder.end.get());
  REQUIRE(got);
  CHECK(std::holds_alternative<z::PrepareMessage>(got->message));
  CHECK_FALSE(holder.receive(holder.end.get(), 50));
  REQUIRE(link->spare_coming());

  SECTION("until it arrives") {
    link->when_spare_known([&] { ++called; });
    io.restart();
    io.run_for(std::chrono::milliseconds(30));  // (less than kSpareWait)
    CHECK(called == 1);
    Sleeper spare;
    auto [spare_link_server, spare_link_spare] = socket_pair();
    l.hand_spare(spare, spare_link_server);
    run_until(io, [&] { return called == 2; });
    CHECK(called == 2);
    CHECK(link->has_spare());
    link->prepare();  // it has one: nothing asked
    CHECK_FALSE(holder.receive(holder.end.get(), 50));
  }
  SECTION("until the holder says it has none") {
    link->when_spare_known([&] { ++called; });
    holder.send(z::HolderSpareMessage{0, 0});
    run_until(io, [&] { return called == 2; });
    CHECK(called == 2);
    CHECK_FALSE(link->has_spare());
    CHECK_FALSE(link->spare_coming());
  }
  SECTION("at most kSpareWait when the holder never answers") {
    const auto asked = std::chrono::steady_clock::now();
    link->when_spare_known([&] { ++called; });
    run_until(io, [&] { return called == 2; });
    CHECK(called == 2);
    CHECK(std::chrono::steady_clock::now() - asked >= engine::HolderLink::kSpareWait);
  }
}

// A descriptor the event loop refuses (epoll_ctl fails: ENOSPC once the user's epoll watches are
// used up, which runs of the server's own user can do). Here: a duplicate of the loop's own epoll
// fd, which epoll cannot watch (EINVAL), found as the newest eventpoll fd of this process.
UniqueFd refused_by(asio::io_context& io) {
  asio::posix::stream_descriptor first(io);  // the loop's epoll is made with its first descriptor
  int newest = -1;
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64] = {};
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(path.c_str(), link, sizeof link - 1) > 0 && std::string(link) == "anon_inode:[eventpoll]") newest = fd;
  }
  REQUIRE(newest >= 0);
  return UniqueFd(::fcntl(newest, F_DUPFD_CLOEXEC, 3));
}

TEST_CASE("a holder link whose socket the event loop cannot watch is gone at once, saying why", "[sessions]") {
  asio::io_context io;
  auto link = std::make_shared<engine::HolderLink>(io, 7, refused_by(io));
  CHECK_THAT(link->failure(), Catch::StartsWith("cannot watch its control socket: "));
  bool gone = false;
  engine::HolderLink::Events events;
  events.gone = [&gone] { gone = true; };
  link->start(std::move(events));
  CHECK_FALSE(gone);  // posted, not called from start()
  io.run_for(std::chrono::milliseconds(200));
  CHECK(gone);
  engine::zygote::StepMessage step;
  CHECK_FALSE(link->send_step(step, {}));
}

TEST_CASE("adopt_fd closes an fd the event loop refuses and returns the error; watch_failure names the limit",
          "[event_loop]") {
  asio::io_context io;
  asio::posix::stream_descriptor d(io);
  UniqueFd refused = refused_by(io);
  const int fd = refused.release();
  const std::error_code ec = engine::adopt_fd(d, fd);
  CHECK(ec.value() == EINVAL);
  CHECK_FALSE(d.is_open());
  CHECK(::fcntl(fd, F_GETFD) == -1);  // closed, not leaked
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  ::close(p[1]);
  CHECK_FALSE(engine::adopt_fd(d, p[0]));
  CHECK(d.is_open());
  CHECK_THAT(engine::watch_failure("the run's output", std::error_code(ENOSPC, asio::error::get_system_category())),
             Catch::Contains("fs.epoll.max_user_watches"));
}
