#include "engine/event_loop.h"  // first: see there
#include "engine/execution/execution.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "sandbox/memfd.h"
#include "sandbox/os_error.h"
#include "sandbox/pipe_capacity.h"
#include "sandbox/proc_tree.h"

namespace engine {

namespace {

using sandbox::UniqueFd;
using Clock = std::chrono::steady_clock;

// "what: strerror" (with what to do when the server is out of fds).
std::runtime_error os_error(const char* what, int err) {
  return std::runtime_error(sandbox::errno_text(what, err));
}

// Sealed: the run reads exactly what was sent, and nothing can write to it.
UniqueFd sealed_memfd(const char* name, const std::string& data) {
  try {
    return sandbox::sealed_memfd(name, data);
  } catch (const std::system_error& e) {
    if (e.code().value() == EMFILE || e.code().value() == ENFILE) throw os_error("memfd_create", e.code().value());
    throw;
  }
}

// A pipe with both ends close-on-exec: {read, write}.
std::pair<UniqueFd, UniqueFd> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw os_error("pipe", errno);
  return {UniqueFd(p[0]), UniqueFd(p[1])};
}

// A script that prints a lot writes it in few large writes; with the default 64 KiB pipe each
// one blocks until the server has read, one round trip per 64 KiB. The stdout pipe holds 512 KiB
// instead (1 MiB of output: 2 wake-ups, not 16). The kernel counts every pipe's capacity against
// its user (pipe-user-pages-soft, 64 MiB by default) and, past that, gives every NEW pipe of the
// user a single page: so at most 32 runs (16 MiB) hold a wide pipe at once, the rest keep the
// default. The returned token holds one of those places until it is destroyed; empty when the
// pipe was not widened.
std::shared_ptr<void> widen_pipe(int fd) {
  constexpr int kStdoutPipeBytes = 512 * 1024;
  constexpr int kMaxWidePipes = 32;
  static std::atomic<int> wide_pipes{0};
  if (wide_pipes.fetch_add(1) >= kMaxWidePipes || sandbox::grow_pipe(fd, kStdoutPipeBytes) < kStdoutPipeBytes) {
    wide_pipes.fetch_sub(1);
    return nullptr;
  }
  static int place;  // any address: the token only needs to be non-empty
  return std::shared_ptr<void>(&place, [](void*) { wide_pipes.fetch_sub(1); });
}

}  // namespace

Execution::Execution(asio::io_context& io, std::uint64_t id, Config config, DoneFn done)
    : io_(io),
      id_(id),
      config_(std::move(config)),
      done_(std::move(done)),
      out_capture_(config_.max_output_bytes),
      err_capture_(config_.max_output_bytes),
      result_decoder_(config_.result_limits),
      pipes_{asio::posix::stream_descriptor(io), asio::posix::stream_descriptor(io),
             asio::posix::stream_descriptor(io)},
      deadline_(io),
      answer_timer_(io) {}

void Execution::start(const std::shared_ptr<ZygoteProcess>& zygote, const std::string& script,
                      std::uint32_t timeout_seconds, const FilesRequest* files) {
  const std::uint64_t id = id_;
  // The launch holds the zygote for as long as the run can still be sent or answered.
  start(
      [zygote, id, timeout_seconds](std::vector<int> fds, bool with_files, ZygoteProcess::RunCallbacks callbacks,
                                    std::string& why) {
        const bool sent = zygote->run(id, timeout_seconds, std::move(fds), std::move(callbacks),
                                      with_files ? zygote::kRunFlagFiles : zygote::kRunFlagNone);
        if (!sent) why = "the zygote is not ready: " + zygote->failure();
        return sent;
      },
      script, timeout_seconds, files);
}

void Execution::start(Launch launch, const std::string& script, std::uint32_t timeout_seconds,
                      const FilesRequest* files) {
  state_ = State::running;
  dispatched_at_ = Clock::now();

  UniqueFd memfd;
  UniqueFd files_fd;
  std::array<std::pair<UniqueFd, UniqueFd>, 3> pipes;
  sandbox::JoinFds join;
  try {
    memfd = sealed_memfd("script.py", script);
    if (files != nullptr) files_fd = sealed_memfd("files", encode_files_request(*files));
    for (auto& p : pipes) p = make_pipe();
    wide_pipe_ = widen_pipe(pipes[0].first.get());
    if (config_.cgroups != nullptr && config_.cgroups->enabled()) {
      RunCgroups::Prepared prepared = config_.cgroups->take();
      cgroup_ = std::move(prepared.cgroup);
      join = std::move(prepared.join);
    }
  } catch (const std::exception& e) {
    fail(std::string("cannot prepare the run: ") + e.what());
    return;
  }
  // The read ends go to the event loop before the run exists: one it could not watch is not started.
  // Non-blocking from here: a launch that fails finishes at once, and finish() reads what is left
  // in them while this process still holds their write ends.
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    if (const std::error_code ec = adopt_fd(pipes_[i], pipes[i].first.release())) {
      fail(watch_failure("the run's output", ec));
      return;
    }
    std::error_code ec;
    pipes_[i].non_blocking(true, ec);
    if (ec) {
      fail("cannot make the run's output non-blocking: " + ec.message());
      return;
    }
  }
  // Script, stdout, stderr, result channel, [files request], then the cgroup joins.
  std::vector<int> fds = {memfd.get(), pipes[0].second.get(), pipes[1].second.get(), pipes[2].second.get()};
  if (files_fd) fds.push_back(files_fd.get());
  for (int fd : join.fds()) fds.push_back(fd);

  std::weak_ptr<Execution> weak = weak_from_this();
  ZygoteProcess::RunCallbacks callbacks;
  callbacks.started = [weak](pid_t, UniqueFd pidfd) {
    auto self = weak.lock();
    if (!self || self->state_ == State::finished) return;
    self->pidfd_ = std::move(pidfd);
    if (self->kill_when_started_) self->kill();
  };
  callbacks.exited = [weak](const zygote::ExitedMessage& exited) {
    if (auto self = weak.lock()) self->on_exited(exited);
  };
  callbacks.failed = [weak](const std::string& reason) {
    if (auto self = weak.lock()) self->fail(reason);
  };
  std::string why;
  if (!launch(fds, files_fd.valid(), std::move(callbacks), why)) {
    fail(why);
    return;
  }
  launch_ = std::move(launch);
  if (state_ == State::finished) return;  // it could not be taken (failed already)
  // While the run runs: its counter files, so that its end is one pread per file.
  if (!cgroup_.empty()) cgroup_stats_ = cgroup_.open_stats();
  // The run holds the only write ends now: EOF means the run is done with them.
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    pipes[i].second.reset();
    read_stream(static_cast<int>(i));
  }
  std::weak_ptr<Execution> weak_self = weak_from_this();
  deadline_.expires_after(std::chrono::seconds(timeout_seconds));
  deadline_.async_wait([weak_self](const std::error_code& ec) {
    auto self = weak_self.lock();
    if (!ec && self) self->on_deadline();
  });
}

void Execution::read_stream(int which) {
  auto self = shared_from_this();
  auto& buffer = buffers_[static_cast<std::size_t>(which)];
  pipes_[static_cast<std::size_t>(which)].async_read_some(
      asio::buffer(buffer), [self, which](const std::error_code& ec, std::size_t n) {
        if (self->state_ == State::finished) return;
        const std::string_view bytes(self->buffers_[static_cast<std::size_t>(which)].data(), n);
        if (n > 0) {
          if (which == 0) self->out_capture_.append(bytes);
          if (which == 1) self->err_capture_.append(bytes);
          if (which == 2) self->result_decoder_.append(bytes);
        }
        if (ec) {
          self->eof_[static_cast<std::size_t>(which)] = true;
          self->maybe_finish();
          return;
        }
        self->read_stream(which);
      });
}

void Execution::on_exited(const zygote::ExitedMessage& exited) {
  if (state_ == State::finished) return;
  exited_ = exited;
  ended_at_ = Clock::now();
  if (state_ == State::running) state_ = State::draining;
  maybe_finish();
}

void Execution::on_deadline() {
  if (state_ != State::running) return;
  timed_out_ = true;
  ended_at_ = Clock::now();
  state_ = State::ending;
  kill();
  answer_after(kKillAnswerWithin);  // answered promptly even if the zygote does not report
}

void Execution::cancel() {
  if (state_ == State::finished || state_ == State::idle) return;
  cancelled_ = true;
  if (exited_) return;  // already over: its result stands
  ended_at_ = Clock::now();
  state_ = State::ending;
  kill();
  answer_after(kKillAnswerWithin);
}

void Execution::fail(const std::string& message) {
  if (state_ == State::finished) return;
  service_error_ = message;
  kill();
  finish();
}

void Execution::stop() {
  if (state_ == State::finished) return;
  cancelled_ = true;
  if (!exited_) ended_at_ = Clock::now();
  kill();
  finish();
}

void Execution::kill() {
  if (pidfd_) {
    // What the run's processes used, read before they go: nobody reaps and reports them after.
    if (!exited_) {
      const pid_t init = sandbox::pid_of_pidfd(pidfd_.get());
      if (init > 0) killed_tree_cpu_us_ = std::max(killed_tree_cpu_us_, sandbox::tree_cpu_us(init));
    }
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  } else {
    kill_when_started_ = true;
  }
}

void Execution::answer_after(std::chrono::milliseconds delay) {
  std::weak_ptr<Execution> weak = weak_from_this();
  answer_timer_.expires_after(delay);
  answer_timer_.async_wait([weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (!ec && self) self->finish();
  });
}

void Execution::maybe_finish() {
  if (state_ == State::finished) return;
  if (!exited_) {
    if (state_ == State::running && config_.answer_at_end_record && eof_[0] && eof_[1] && eof_[2] &&
        !cgroup_.empty() && pidfd_) {
      const auto end = result_decoder_.end_record();
      if (end && end->exit_code >= 0 && end->exit_code <= 255) {
        zygote::ExitedMessage exited;
        exited.wait_status = end->exit_code << 8;  // as waitpid() gives an exit with that code
        exited.user_cpu_us = end->user_cpu_us + end->children_user_cpu_us;
        exited.system_cpu_us = end->system_cpu_us + end->children_system_cpu_us;
        exited_ = exited;
        answered_at_end_record_ = true;
        ended_at_ = Clock::now();
        finish();
      }
    }
    return;
  }
  if (eof_[0] && eof_[1] && eof_[2]) {
    finish();
    return;
  }
  if (state_ == State::ending) return;  // the answer timer is already running
  // The run's process is gone but something still holds its pipes (an unsandboxed run can
  // leave a daemon holding them): drain briefly, then answer with what was read.
  answer_after(kPipeDrainGrace);
}

void Execution::finish() {
  if (state_ == State::finished) return;
  const bool dispatched = state_ != State::idle;
  state_ = State::finished;
  deadline_.cancel();
  answer_timer_.cancel();
  // Whatever is still readable now belongs to the run (cheap: non-blocking reads).
  for (std::size_t i = 0; i < pipes_.size(); ++i) {
    auto& pipe = pipes_[i];
    if (!pipe.is_open()) continue;
    char buf[16384];
    for (int round = 0; round < 64; ++round) {
      const ssize_t n = ::read(pipe.native_handle(), buf, sizeof buf);
      if (n <= 0) break;
      const std::string_view bytes(buf, static_cast<std::size_t>(n));
      if (i == 0) out_capture_.append(bytes);
      if (i == 1) err_capture_.append(bytes);
      if (i == 2) result_decoder_.append(bytes);
    }
    std::error_code ignored;
    pipe.close(ignored);
  }
  wide_pipe_.reset();

  RunEvidence evidence;
  evidence.dispatched = dispatched;
  const auto end = exited_ || ((timed_out_ || cancelled_) && ended_at_ != Clock::time_point{}) ? ended_at_
                                                                                              : Clock::now();
  if (dispatched) {
    evidence.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - dispatched_at_).count();
  }
  evidence.timed_out = timed_out_;
  evidence.cancelled = cancelled_;
  evidence.exited = exited_;
  evidence.killed_tree_cpu_us = killed_tree_cpu_us_;
  evidence.service_error = service_error_;
  evidence.stdout_stream = out_capture_.finish();
  evidence.stderr_stream = err_capture_.finish();
  if (exited_) {
    // What the runner reported, when its channel holds a complete, valid result (else nothing:
    // a script can write to or close that fd, never make the run fail).
    evidence.rich = result_decoder_.finish();
    if (result_decoder_.failed()) {
      spdlog::debug("run {}: no value or figures: result channel {}", id_, result_decoder_.error());
    }
  }
  if (!cgroup_.empty()) evidence.cgroup = cgroup_stats_.read();
  // Answered at the end record: whatever is left of the run goes (its teardown included).
  if (answered_at_end_record_) ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  if (!cgroup_.empty()) {
    // rmdir can wait briefly for the kernel to let go of the run's processes: off the loop, and
    // the counter files are closed there too, not before the answer. The init's pidfd goes
    // along: a cgroup still busy with the run's exiting processes is removed once the init (the
    // last of them) has gone, not after rounds of kill and retry.
    auto cgroup = std::make_shared<sandbox::RunCgroup>(std::move(cgroup_));
    auto counters = std::make_shared<sandbox::CgroupCounters>(std::move(cgroup_stats_));
    auto init = std::make_shared<sandbox::UniqueFd>(std::move(pidfd_));
    asio::post(config_.cgroup_remover, [cgroup, counters, init]() mutable {
      counters.reset();
      cgroup->remove(init->get());
    });
  }
  pidfd_.reset();
  launch_ = nullptr;  // (what it holds: the zygote, the session's holder)
  if (done_) {
    // Posted: the owner may start new runs from its callback while this one unwinds.
    asio::post(io_, [done = std::move(done_), evidence = std::move(evidence)]() mutable {
      done(std::move(evidence));
    });
  }
}

}  // namespace engine
