#include "engine/event_loop.h"  // first: see there
#include "engine/sessions/holder_link.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <spdlog/spdlog.h>

namespace engine {
namespace {

// Past this many messages that are malformed or unexpected, a holder is let go.
constexpr unsigned kMaxBadMessages = 64;
// Messages handled per wake-up, so that a flooding holder cannot hold the loop.
constexpr int kMessagesPerWake = 32;

// Whether the process behind `pidfd` has exited: its pidfd polls readable. A completed wait is
// not proof: asio can complete one on a descriptor that is not ready (a descriptor closed while
// its readiness was queued hands its reactor state, events included, to the next one registered).
bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n != 0;  // (an error: it cannot be watched, so it counts as gone)
}

}  // namespace

HolderLink::HolderLink(asio::io_context& io, std::uint64_t id, sandbox::UniqueFd socket)
    : io_(io), id_(id), socket_(io), pidfd_(io), spare_timer_(io) {
  ::fcntl(socket.get(), F_SETFL, O_NONBLOCK);
  // A socket the loop cannot watch leaves the link gone from its start (start() reports it).
  if (const std::error_code ec = adopt_fd(socket_, socket.release())) {
    failure_ = watch_failure("its control socket", ec);
    spdlog::warn("session process {}: {}", id_, failure_);
  }
}

HolderLink::~HolderLink() {
  drop_spare();
  if (pidfd_.is_open()) ::syscall(SYS_pidfd_send_signal, pidfd_.native_handle(), SIGKILL, nullptr, 0);
}

void HolderLink::start(Events events) {
  events_ = std::move(events);
  if (!socket_.is_open()) {
    asio::post(io_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->lose();
    });
    return;
  }
  wait_readable();
}

void HolderLink::set_pidfd(sandbox::UniqueFd pidfd) {
  if (!pidfd || pidfd_.is_open() || gone_) return;
  if (const std::error_code ec = adopt_fd(pidfd_, pidfd.release())) {
    spdlog::warn("session process {}: {}", id_, watch_failure("its process", ec));
    return;  // its socket's end still tells its loss
  }
  watch_exit();
}

sandbox::UniqueFd HolderLink::dup_pidfd() {
  if (!pidfd_.is_open()) return {};
  return sandbox::UniqueFd(::fcntl(pidfd_.native_handle(), F_DUPFD_CLOEXEC, 3));
}

void HolderLink::wait_readable() {
  if (gone_ || !socket_.is_open()) return;
  std::weak_ptr<HolderLink> weak = weak_from_this();
  socket_.async_wait(asio::posix::stream_descriptor::wait_read, [weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (!self || ec || self->gone_) return;
    self->on_readable();
  });
}

void HolderLink::on_readable() {
  auto self = shared_from_this();  // an event may drop the last other reference
  for (int n = 0; n < kMessagesPerWake && !gone_; ++n) {
    zygote::Received got = zygote::receive_message(socket_.native_handle());
    if (got.status == zygote::Received::Status::would_block) break;
    if (got.status == zygote::Received::Status::eof) {
      lose();
      return;
    }
    if (got.status == zygote::Received::Status::error) {
      if (++bad_messages_ > kMaxBadMessages) {
        spdlog::warn("session process {}: too many invalid messages ({}); let go", id_, got.error);
        lose();
        return;
      }
      continue;
    }
    if (const auto* ready = std::get_if<zygote::HolderReadyMessage>(&got.message)) {
      if (events_.ready) events_.ready(*ready);
    } else if (const auto* started = std::get_if<zygote::StepStartedMessage>(&got.message)) {
      sandbox::UniqueFd pidfd;
      if (got.fds.size() == 1) pidfd = std::move(got.fds.front());
      if (events_.started) events_.started(*started, std::move(pidfd));
    } else if (const auto* exited = std::get_if<zygote::StepExitedMessage>(&got.message)) {
      zygote::StepExitedMessage e = *exited;
      if (e.step_id == 0) {
        // One of its spares: the step it took, if any (else it was never the server's concern).
        if (spare_ && spare_->pid == e.pid) drop_spare();
        const auto it = spare_steps_.find(e.pid);
        if (it == spare_steps_.end()) continue;
        e.step_id = it->second;
        spare_steps_.erase(it);
      }
      if (events_.exited) events_.exited(e);
    } else if (const auto* spare = std::get_if<zygote::HolderSpareMessage>(&got.message)) {
      on_spare(*spare, std::move(got.fds));
    } else if (++bad_messages_ > kMaxBadMessages) {
      spdlog::warn("session process {}: too many unexpected messages; let go", id_);
      lose();
      return;
    }
  }
  wait_readable();
}

void HolderLink::watch_exit() {
  std::weak_ptr<HolderLink> weak = weak_from_this();
  pidfd_.async_wait(asio::posix::stream_descriptor::wait_read, [weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (!self || ec || self->gone_) return;
    if (!exited(self->pidfd_.native_handle())) {
      self->watch_exit();  // a spurious wake-up: the process runs on
      return;
    }
    // What it sent before it ended first (a STARTED: its step's process runs on), then its loss.
    self->on_readable();
    self->lose();
  });
}

bool HolderLink::send_step(const zygote::StepMessage& step, std::span<const int> fds) {
  if (gone_ || !socket_.is_open()) return false;
  if ((step.flags & zygote::kStepInPlace) != 0) {
    ++in_place_steps_;
    drop_spare();
    spare_known();
  }
  return zygote::send_message_now(socket_.native_handle(), step, fds) == 0;
}

std::optional<HolderLink::Taken> HolderLink::send_step_to_spare(const zygote::StepMessage& step,
                                                                std::span<const int> fds) {
  if (gone_ || !spare_ || (step.flags & zygote::kStepInPlace) != 0) return std::nullopt;
  Spare spare = std::move(*spare_);
  spare_.reset();
  if (zygote::send_message_now(spare.link.get(), step, fds) != 0) {
    ::syscall(SYS_pidfd_send_signal, spare.pidfd.get(), SIGKILL, nullptr, 0);
    return std::nullopt;  // (dead, or not reading: the holder forks the step's process instead)
  }
  spare_steps_[spare.pid] = step.step_id;
  return Taken{spare.pid, std::move(spare.pidfd)};
}

namespace {

bool is_seqpacket_socket(int fd) {
  int type = 0;
  socklen_t size = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == SOCK_SEQPACKET;
}

// A pidfd accepts signal 0; any other descriptor is refused (EBADF).
bool is_pidfd(int fd) { return ::syscall(SYS_pidfd_send_signal, fd, 0, nullptr, 0) == 0; }

}  // namespace

void HolderLink::on_spare(const zygote::HolderSpareMessage& spare, std::vector<sandbox::UniqueFd> fds) {
  spare_known();
  if (spare.pid == 0 && fds.empty()) return;  // the answer to PREPARE of a holder that cannot fork
  if (fds.size() != 2 || spare.pid < 0 || !is_seqpacket_socket(fds[0].get()) || !is_pidfd(fds[1].get())) {
    ++bad_messages_;  // (a process of the session may send anything: only a link and a pidfd do)
    return;
  }
  Spare next{spare.pid, std::move(fds[0]), std::move(fds[1])};
  // Forked before a step this process ran in place: it holds an older state.
  if (spare.generation != in_place_steps_ || gone_) {
    ::syscall(SYS_pidfd_send_signal, next.pidfd.get(), SIGKILL, nullptr, 0);
    return;
  }
  drop_spare();  // (one at a time: the newer one is kept)
  ::fcntl(next.link.get(), F_SETFL, O_NONBLOCK);
  spare_ = std::move(next);
}

void HolderLink::drop_spare() {
  if (!spare_) return;
  ::syscall(SYS_pidfd_send_signal, spare_->pidfd.get(), SIGKILL, nullptr, 0);
  spare_.reset();  // (its link closes: a spare that outlived the signal sees EOF and exits)
}

void HolderLink::prepare() {
  if (gone_ || !socket_.is_open() || spare_ || spare_coming_) return;
  spare_coming_ = zygote::send_message_now(socket_.native_handle(), zygote::PrepareMessage{}) == 0;
}

void HolderLink::when_spare_known(std::function<void()> then) {
  if (!spare_coming_) {
    asio::post(io_, std::move(then));
    return;
  }
  spare_waiters_.push_back(std::move(then));
  if (spare_waiters_.size() > 1) return;
  std::weak_ptr<HolderLink> weak = weak_from_this();
  spare_timer_.expires_after(kSpareWait);
  spare_timer_.async_wait([weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (!ec && self) self->spare_known();
  });
}

void HolderLink::spare_known() {
  spare_coming_ = false;
  spare_timer_.cancel();
  for (auto& then : std::exchange(spare_waiters_, {})) asio::post(io_, std::move(then));
}

void HolderLink::lose() {
  if (gone_) return;
  auto self = shared_from_this();
  release();
  if (events_.gone) {
    auto gone = std::move(events_.gone);
    events_ = {};
    gone();
  }
}

void HolderLink::release() {
  if (gone_) return;
  gone_ = true;
  drop_spare();
  spare_known();
  std::error_code ignored;
  socket_.close(ignored);  // the process sees EOF and exits
  if (pidfd_.is_open()) {
    ::syscall(SYS_pidfd_send_signal, pidfd_.native_handle(), SIGKILL, nullptr, 0);
    pidfd_.close(ignored);
  }
}

}  // namespace engine
