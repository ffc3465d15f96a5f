#include "engine/event_loop.h"  // first: see there
#include "engine/sessions/session_sandbox.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <utility>

#include <spdlog/spdlog.h>

namespace engine {
namespace {

using sandbox::UniqueFd;

// A sandbox whose root has not reported within this long is given up.
constexpr auto kStartWithin = std::chrono::seconds(60);
// After a process running a step is gone (its own, or one that ran it in place), how long its
// parent's report of its wait status may take before the step is answered without it.
constexpr auto kExitReportGrace = std::chrono::milliseconds(200);

}  // namespace

SessionSandbox::SessionSandbox(asio::io_context& io, std::uint64_t run_id, Interpreter interpreter,
                               std::vector<std::string> dependencies, std::shared_ptr<void> keep_alive,
                               Config config)
    : io_(io),
      run_id_(run_id),
      interpreter_(std::move(interpreter)),
      dependencies_(std::move(dependencies)),
      keep_alive_(std::move(keep_alive)),
      config_(std::move(config)),
      start_timer_(io) {}

SessionSandbox::~SessionSandbox() { close("the sandbox was dropped"); }

void SessionSandbox::start(const std::shared_ptr<ZygoteProcess>& zygote,
                           std::function<void(const std::string& error)> ready) {
  zygote_ = zygote;
  ready_ = std::move(ready);
  python_version_ = zygote->python_version();
  auto fail_now = [this](const std::string& why) {
    auto done = std::move(ready_);
    ready_ = nullptr;
    close(why);
    if (done) asio::post(io_, [done = std::move(done), why] { done(why); });
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    fail_now("cannot create the session's control socket");
    return;
  }
  UniqueFd server_end(sv[0]), session_end(sv[1]);
  sandbox::JoinFds join;
  try {
    if (config_.cgroups != nullptr && (config_.cgroups->limits_memory() || config_.cgroups->limits_processes())) {
      cgroup_ = sandbox::RunCgroup::create(*config_.cgroups, "session-" + std::to_string(run_id_), config_.limits);
      join = cgroup_.open_join_fds();
      counters_ = cgroup_.open_counters();
    }
  } catch (const std::exception& e) {
    fail_now(std::string("cannot create the session's cgroup: ") + e.what());
    return;
  }
  root_ = std::make_shared<HolderLink>(io_, 0, std::move(server_end));
  holders_[0] = root_;
  wire(root_);

  std::vector<int> fds = {session_end.get()};
  for (int fd : join.fds()) fds.push_back(fd);
  std::weak_ptr<SessionSandbox> weak = weak_from_this();
  ZygoteProcess::RunCallbacks callbacks;
  callbacks.started = [weak, closed = closed_](pid_t, UniqueFd pidfd) {
    auto self = weak.lock();
    if (!self || *closed) {  // closed before its init was known: it goes now
      if (pidfd) ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
      return;
    }
    self->init_pidfd_ = std::move(pidfd);
  };
  callbacks.exited = [weak](const zygote::ExitedMessage& exited) {
    auto self = weak.lock();
    if (!self) return;
    std::string why = "its sandbox ended";
    if ((exited.flags & zygote::kExitSetupFailed) != 0) why = "its sandbox could not be set up: " + exited.detail;
    self->end(why);
  };
  callbacks.failed = [weak](const std::string& reason) {
    if (auto self = weak.lock()) self->end(reason);
  };
  if (!zygote->run(run_id_, 0, fds, std::move(callbacks), zygote::kRunFlagSession)) {
    fail_now("the zygote is not ready: " + zygote->failure());
    return;
  }
  start_timer_.expires_after(kStartWithin);
  start_timer_.async_wait([weak](const std::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || !self->ready_) return;
    self->end("its interpreter did not start within " + std::to_string(kStartWithin.count()) + " s");
  });
}

void SessionSandbox::wire(const std::shared_ptr<HolderLink>& link) {
  std::weak_ptr<SessionSandbox> weak = weak_from_this();
  std::weak_ptr<HolderLink> weak_link = link;
  const std::uint64_t id = link->id();
  HolderLink::Events events;
  events.ready = [weak, weak_link](const zygote::HolderReadyMessage& ready) {
    auto self = weak.lock();
    auto l = weak_link.lock();
    if (self && l) self->on_ready(l, ready);
  };
  events.started = [weak](const zygote::StepStartedMessage& started, UniqueFd pidfd) {
    if (auto self = weak.lock()) self->step_started(started, std::move(pidfd));
  };
  events.exited = [weak](const zygote::StepExitedMessage& exited) {
    if (auto self = weak.lock()) self->on_exited(exited);
  };
  events.gone = [weak, id] {
    if (auto self = weak.lock()) self->on_gone(id);
  };
  link->start(std::move(events));
}

std::shared_ptr<HolderLink> SessionSandbox::add_holder(std::uint64_t step_id, UniqueFd server_end) {
  auto link = std::make_shared<HolderLink>(io_, step_id, std::move(server_end));
  // The links the sessions let go of leave with this one (a step each: a long session's would
  // otherwise pile up, each keeping its link's memory through the weak reference).
  std::erase_if(holders_, [](const auto& entry) { return entry.second.expired(); });
  holders_[step_id] = link;
  wire(link);
  return link;
}

void SessionSandbox::watch_step(std::uint64_t step_id, std::optional<std::uint64_t> in_place_holder, StepWatch watch) {
  steps_[step_id] = Watched{in_place_holder, std::move(watch)};
}

void SessionSandbox::unwatch_step(std::uint64_t step_id) { steps_.erase(step_id); }

void SessionSandbox::on_ready(const std::shared_ptr<HolderLink>& link, const zygote::HolderReadyMessage& ready) {
  // Only the message a process sends about itself counts: the root at start, a step's process
  // about its own step, a holder about a step it ran in place.
  if (link->id() == 0 && ready.step_id == 0 && !link->ready()) {
    link->set_ready();
    link->set_tasks(ready.tasks);
    start_timer_.cancel();
    if (auto done = std::move(ready_)) {
      ready_ = nullptr;
      done("");
    }
    return;
  }
  const auto it = steps_.find(ready.step_id);
  if (it == steps_.end()) return;
  const bool own = it->second.in_place_holder ? link->id() == *it->second.in_place_holder
                                               : link->id() == ready.step_id;
  if (!own) return;
  link->set_ready();
  link->set_tasks(ready.tasks);
  if (it->second.watch.ready) it->second.watch.ready(ready);
}

void SessionSandbox::step_started(const zygote::StepStartedMessage& started, UniqueFd pidfd) {
  const auto it = steps_.find(started.step_id);
  if (it == steps_.end() || it->second.in_place_holder) return;
  if (const auto h = holders_.find(started.step_id); h != holders_.end()) {
    if (auto link = h->second.lock(); link && pidfd) {
      link->set_pidfd(UniqueFd(::fcntl(pidfd.get(), F_DUPFD_CLOEXEC, 3)));
    }
  }
  if (it->second.watch.started) it->second.watch.started(started.pid, std::move(pidfd));
}

void SessionSandbox::on_exited(const zygote::StepExitedMessage& exited) {
  // A step's own process, or (its parent reporting) a process that was running a step in place.
  auto it = steps_.find(exited.step_id);
  if (it == steps_.end() || it->second.in_place_holder) {
    it = steps_.end();
    for (auto s = steps_.begin(); s != steps_.end(); ++s) {
      if (s->second.in_place_holder == exited.step_id) it = s;
    }
  }
  if (it == steps_.end()) return;
  auto watch = it->second.watch;
  if (watch.exited) watch.exited(exited);
}

void SessionSandbox::on_gone(std::uint64_t holder_id) {
  // The root before it held step 0: the session never started. Once it has, the root is one
  // state's process among others (a step may kill it and live on); the sandbox ends with its
  // init, which outlives the root while any process of the session lives.
  if (ended_flag_) return;
  if (holder_id == 0 && ready_) {
    end(root_ && !root_->failure().empty() ? root_->failure() : "its interpreter ended");
    return;
  }
  // A step running in that process (its own, or in place): its parent's report, or SIGKILL
  // after a grace. The parent may be gone too (a step that killed its holder, then died): then
  // nothing else would answer the step before its timeout.
  for (auto& [step_id, watched] : steps_) {
    const bool runs_there = watched.in_place_holder ? *watched.in_place_holder == holder_id : step_id == holder_id;
    if (!runs_there) continue;
    auto timer = std::make_shared<asio::steady_timer>(io_);
    timer->expires_after(kExitReportGrace);
    std::weak_ptr<SessionSandbox> weak = weak_from_this();
    const std::uint64_t id = step_id;
    timer->async_wait([weak, timer, id](const std::error_code&) {
      auto self = weak.lock();
      if (!self) return;
      const auto s = self->steps_.find(id);
      if (s == self->steps_.end()) return;
      zygote::StepExitedMessage unknown;
      unknown.step_id = id;
      unknown.wait_status = SIGKILL;
      auto watch = s->second.watch;
      if (watch.exited) watch.exited(unknown);
    });
  }
  if (holder_gone_) holder_gone_(holder_id);
}

std::optional<std::int64_t> SessionSandbox::memory_bytes() const {
  if (cgroup_.empty()) return std::nullopt;
  return cgroup_.memory_current();
}

std::optional<sandbox::CgroupStats> SessionSandbox::limit_counters() const {
  if (cgroup_.empty()) return std::nullopt;
  return counters_.read();
}

void SessionSandbox::end(const std::string& why) {
  if (ended_flag_) return;
  close(why);
  if (auto done = std::move(ready_)) {
    ready_ = nullptr;
    done(why);
  }
  if (ended_) {
    auto callback = std::move(ended_);
    ended_ = nullptr;
    callback(why);
  }
}

void SessionSandbox::close(const std::string& why) {
  if (ended_flag_) return;
  ended_flag_ = true;
  *closed_ = true;
  end_reason_ = why;
  start_timer_.cancel();
  for (auto& [id, weak] : holders_) {
    if (auto link = weak.lock()) link->release();
  }
  holders_.clear();
  root_.reset();
  steps_.clear();
  // The init is pid 1 of the sandbox: its death ends every process in it (unsandboxed, the
  // zygote, their subreaper, kills what is left).
  if (init_pidfd_) ::syscall(SYS_pidfd_send_signal, init_pidfd_.get(), SIGKILL, nullptr, 0);
  init_pidfd_.reset();
  counters_ = {};
  if (!cgroup_.empty()) {
    auto cgroup = std::make_shared<sandbox::RunCgroup>(std::move(cgroup_));
    if (config_.cgroup_remover) {
      asio::post(config_.cgroup_remover, [cgroup] { cgroup->remove(); });
    }
  }
  zygote_.reset();
  keep_alive_.reset();
  spdlog::debug("session sandbox {} closed: {}", run_id_, why);
}

}  // namespace engine
