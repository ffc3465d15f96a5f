#include "engine/zygote/session_holder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "engine/zygote/children.h"
#include "engine/zygote/protocol.h"
#include "engine/zygote/written_pages.h"
#include "sandbox/child_setup.h"
#include "sandbox/unique_fd.h"

namespace engine::zygote {
namespace {

using sandbox::UniqueFd;

// A step's fds, as the runner expects them (the same numbers as a run's).
constexpr int kStepScriptFd = 3;
constexpr int kStepResultFd = 5;
constexpr int kStepFilesFd = 6;
constexpr int kSlots = 7;  // 0-6: the runner's during a step, never a session's own file
constexpr int kSpareLinkFd = 3;  // a spare's end of its link to its holder, until its step
constexpr long long kRehearsalParts = 3;  // python_stubs/session.py, _mpes_step_spare
// A spare takes its own copies of at most this much of what its holder wrote (written_pages.h),
// this much at a time between looks at its link.
constexpr std::size_t kWarmBytes = 4 << 20;
constexpr std::size_t kWarmSliceBytes = 256 << 10;

std::int64_t micros(const timeval& t) { return t.tv_sec * 1000000 + t.tv_usec; }

// The open-file limit's reserve (sandbox::kRunnerReserveFds): a holder takes its hard limit, so
// that a state whose code holds every descriptor it may still takes its next step (the step's
// fds, a spare's link, the signalfd); a step's code runs under the soft limit the state left.
// Returns that soft limit.
rlim_t take_reserve_fds() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return RLIM_INFINITY;
  const rlim_t soft = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  return soft;
}

void give_back_reserve_fds(rlim_t soft) {
  rlimit limit{};
  if (soft == RLIM_INFINITY || ::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  limit.rlim_cur = std::min(soft, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

void set_signal_mask(bool block_chld) {
  sigset_t set;
  sigemptyset(&set);
  if (block_chld) sigaddset(&set, SIGCHLD);
  ::sigprocmask(SIG_SETMASK, &set, nullptr);
}

// What a process forked in a holder's loop is to become: the loop returns it in the child, which
// starts that work from the top of its stack. (A step's process holds the next state and forks the
// next step's: were each child to go on from inside the call that forked it, every step would
// leave a stack frame set behind for good, and a long session would grow its stack to the limit.)
struct Becoming {
  enum class Kind { step, spare } kind = Kind::step;
  StepMessage step{};               // a step: the step and its fds
  std::vector<UniqueFd> fds;
  UniqueFd link;                    // a spare: its end of the link, and the pages to copy
  std::vector<PageRange> written;   // (written_pages.h)
};

class Holder {
 public:
  explicit Holder(const SessionRunner& runner) : r_(runner) {}

  // Holds the state `ready` reports; in each process forked from it, runs the step it was forked
  // for, then holds the state that step left. Never returns.
  [[noreturn]] void serve(HolderReadyMessage ready);

 private:
  // Reports `ready` (this process now holds a state) and serves its control socket until the
  // server lets go of it (the process exits). Returns only in a child forked for a step or as a
  // spare (on PREPARE).
  Becoming hold(const HolderReadyMessage& ready);
  void watch_children();
  std::optional<Becoming> handle_control();
  std::optional<Becoming> on_step(const StepMessage& step, std::vector<UniqueFd> fds);
  // Forks a spare and hands it to the server; tells the server there is none when it cannot.
  std::optional<Becoming> fork_spare();
  pid_t fork_child();  // with the interpreter's fork protocol; 0 in the child
  // In a process forked for a step: STEP_STARTED, with its pidfd.
  static void report_started(std::uint64_t step_id);
  // A spare: copies its holder's pages, rehearses, then waits for its step (into `spare`).
  void await_step(Becoming& spare);
  HolderReadyMessage run_step(const StepMessage& step, std::vector<UniqueFd> fds, bool in_place);
  void kill_untracked_children();
  void reap();
  bool tracked(pid_t pid) const { return steps_.count(pid) != 0 || spares_.count(pid) != 0; }

  const SessionRunner& r_;
  UniqueFd sigfd_;
  std::map<pid_t, std::uint64_t> steps_;  // children forked for a step -> its id
  std::set<pid_t> spares_;  // children forked ahead (handed to the server; some took a step since)
  std::uint32_t generation_ = 0;  // steps run in place so far (HolderSpareMessage)
  rlim_t steps_open_files_ = RLIM_INFINITY;  // the soft open-file limit steps run under
};

void Holder::watch_children() {
  set_signal_mask(true);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigfd_.reset(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
}

void Holder::serve(HolderReadyMessage ready) {
  for (;;) {
    Becoming next = hold(ready);
    // A child of the holder: none of the parent's bookkeeping is its own.
    steps_.clear();
    spares_.clear();
    generation_ = 0;
    sigfd_.reset();  // the holder's; this process watches its own children later
    if (next.kind == Becoming::Kind::spare) {
      await_step(next);  // (the server knows a spare's pidfd: it took the step)
    } else {
      report_started(next.step.step_id);
    }
    ready = run_step(next.step, std::move(next.fds), false);
  }
}

void Holder::report_started(std::uint64_t step_id) {
  // From a process forked for a step, on its holder's control socket, before the step's first
  // line: were the holder to report it after the fork, a step that kills the holder at once
  // (os.kill(os.getppid(), 9)) could end it before the report, and the server would take a
  // step that ran for one that never started.
  const pid_t self = ::getpid();
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, self, 0)));
  const StepStartedMessage started{step_id, self};
  if (pidfd) {
    const int attached[] = {pidfd.get()};
    send_message(kHolderControlFd, started, attached);
  } else {
    send_message(kHolderControlFd, started);
  }
}

Becoming Holder::hold(const HolderReadyMessage& ready) {
  steps_open_files_ = take_reserve_fds();
  watch_children();
  if (send_message(kHolderControlFd, ready) != 0) ::_exit(0);  // the server is gone
  reap();  // what ended before the signalfd existed
  for (;;) {
    pollfd fds[2] = {{kHolderControlFd, POLLIN, 0}, {sigfd_.get(), POLLIN, 0}};
    // The session's own threads (an in-place holder has some) run while this one waits.
    void* thread_state = r_.py->PyEval_SaveThread();
    const int n = ::poll(fds, sigfd_ ? 2 : 1, -1);
    r_.py->PyEval_RestoreThread(thread_state);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::_exit(0);
    }
    if (sigfd_ && fds[1].revents != 0) {
      signalfd_siginfo info;
      while (::read(sigfd_.get(), &info, sizeof info) > 0) {
      }
      reap();
    }
    if (fds[0].revents != 0) {
      if (auto next = handle_control()) return std::move(*next);
    }
  }
}

std::optional<Becoming> Holder::handle_control() {
  for (;;) {
    Received got = receive_message(kHolderControlFd);
    switch (got.status) {
      case Received::Status::would_block:
        return std::nullopt;
      case Received::Status::eof:
        ::_exit(0);  // released: its children (a spare, later states) see to themselves
      case Received::Status::error:
        if (got.error.rfind("recvmsg", 0) == 0) ::_exit(0);
        continue;  // a malformed message: ignored
      case Received::Status::message:
        break;
    }
    std::optional<Becoming> next;
    if (const auto* step = std::get_if<StepMessage>(&got.message)) {
      next = on_step(*step, std::move(got.fds));
    } else if (std::holds_alternative<PrepareMessage>(got.message)) {
      // (Sent when the server holds no spare of this holder's, and awaits one: it is told when
      // there is none.)
      if (count_tasks() == 1) {
        next = fork_spare();
      } else {
        send_message(kHolderControlFd, HolderSpareMessage{0, generation_});
      }
    }
    if (next) return next;
  }
}

pid_t Holder::fork_child() {
  r_.py->call(r_.fork_prepare);
  std::fflush(nullptr);
  r_.py->PyOS_BeforeFork();
  const pid_t pid = ::fork();
  if (pid == 0) {
    r_.py->PyOS_AfterFork_Child();
    r_.py->call(r_.forked);
    return 0;
  }
  r_.py->PyOS_AfterFork_Parent();
  return pid;
}

std::optional<Becoming> Holder::on_step(const StepMessage& step, std::vector<UniqueFd> fds) {
  if (fds.size() != StepMessage::fd_count(step.flags)) {
    // Never sent so by the server: answer as a failed setup, so that the step is not waited for.
    send_message(kHolderControlFd, StepExitedMessage{step.step_id, 125 << 8, 0, 0, 0});
    return std::nullopt;
  }
  if ((step.flags & kStepInPlace) != 0) {
    ++generation_;  // the spares forked before hold an older state now
    const HolderReadyMessage ready = run_step(step, std::move(fds), true);
    steps_open_files_ = take_reserve_fds();
    watch_children();
    if (send_message(kHolderControlFd, ready) != 0) ::_exit(0);
    reap();
    return std::nullopt;
  }
  // (The server sends a step to this holder's spare itself when it has one.)
  const pid_t pid = fork_child();
  if (pid == 0) {
    Becoming next;
    next.step = step;
    next.fds = std::move(fds);
    return next;
  }
  if (pid < 0) {
    send_message(kHolderControlFd, StepExitedMessage{step.step_id, 125 << 8, 0, 0, 0});
    return std::nullopt;
  }
  steps_[pid] = step.step_id;  // (its process reports its own start: report_started)
  return std::nullopt;
}

std::optional<Becoming> Holder::fork_spare() {
  const HolderSpareMessage none{0, generation_};
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    send_message(kHolderControlFd, none);
    return std::nullopt;
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  std::vector<PageRange> written = pages_written_here(kWarmBytes);
  const pid_t pid = fork_child();
  if (pid == 0) {
    ours.reset();
    Becoming spare;
    spare.kind = Becoming::Kind::spare;
    spare.link = std::move(theirs);
    spare.written = std::move(written);
    return spare;
  }
  if (pid < 0) {
    send_message(kHolderControlFd, none);
    return std::nullopt;
  }
  spares_.insert(pid);
  // The spare is the server's: its link and pidfd go there, and this process keeps neither.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const int attached[] = {ours.get(), pidfd.get()};
  if (!pidfd || send_message(kHolderControlFd, HolderSpareMessage{pid, generation_}, attached) != 0) {
    ::kill(pid, SIGKILL);  // (reaped by reap())
    send_message(kHolderControlFd, none);
  }
  return std::nullopt;
}

void Holder::await_step(Becoming& spare) {
  // The runner's slots (0-6) drop the holder's fds (its control socket); the session's own files
  // stay open.
  const int wanted[kSlots] = {-1, -1, -1, spare.link.get(), -1, -1, -1};
  try {
    sandbox::place_fds(wanted);
  } catch (...) {
    ::_exit(125);
  }
  if (spare.link.get() < kSlots) (void)spare.link.release();  // (a slot now: replaced)
  spare.link.reset();
  ::fcntl(kSpareLinkFd, F_SETFD, FD_CLOEXEC);
  const auto step_waiting = [] {
    pollfd link_fd{kSpareLinkFd, POLLIN, 0};
    return ::poll(&link_fd, 1, 0) != 0;
  };
  take_copies(spare.written, kWarmSliceBytes, step_waiting);
  spare.written = {};
  // What every step does, rehearsed ahead (its page copies), in parts: a step that arrives
  // meanwhile waits for one part at most.
  for (long long part = 0; part < kRehearsalParts; ++part) {
    if (step_waiting()) break;
    r_.py->set_int(r_.globals, "_MPES_REHEARSAL_PART", part);
    r_.py->call(r_.spare);
  }
  Received got = receive_message_blocking(kSpareLinkFd);
  const auto* step = std::get_if<StepMessage>(&got.message);
  if (got.status != Received::Status::message || step == nullptr ||
      got.fds.size() != StepMessage::fd_count(step->flags) || (step->flags & kStepInPlace) != 0) {
    ::_exit(0);  // the server let go of the spare
  }
  spare.step = *step;
  spare.fds = std::move(got.fds);
}

HolderReadyMessage Holder::run_step(const StepMessage& step, std::vector<UniqueFd> fds, bool in_place) {
  const bool files = (step.flags & kStepFiles) != 0;
  // 0 /dev/null, 1 stdout, 2 stderr, 3 script, 4 control socket, 5 result channel, 6 files (or
  // /dev/null): the runner's slots, all seven taken for the whole step, so that no file the
  // step's code opens lands in one (the next step replaces them; a session's own files, from
  // 7 up, stay open from step to step, as in one interpreter).
  const int wanted[kSlots] = {-1,
                              fds[StepMessage::kStdoutFd].get(),
                              fds[StepMessage::kStderrFd].get(),
                              fds[StepMessage::kScriptFd].get(),
                              in_place ? kHolderControlFd : fds[StepMessage::kBaseFds].get(),
                              fds[StepMessage::kResultFd].get(),
                              files ? fds.back().get() : -1};
  try {
    sandbox::place_fds(wanted);
  } catch (...) {
    ::_exit(125);
  }
  for (auto& fd : fds) {
    if (fd.get() < kSlots) (void)fd.release();  // a number among the slots: replaced already
  }
  fds.clear();  // the other originals (placed above)
  sigfd_.reset();
  ::fcntl(kHolderControlFd, F_SETFD, FD_CLOEXEC);  // not for the step's subprocesses
  give_back_reserve_fds(steps_open_files_);

  // The step's processes: its own group, and its orphans come back to it.
  const pid_t home_group = ::getpgid(0);
  ::setpgid(0, 0);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  if (step.cpu_seconds > 0) {
    // Soft only: the hard limit stays, so that a later step may get a larger budget.
    rlimit cpu{};
    ::getrlimit(RLIMIT_CPU, &cpu);
    const rlim_t used = static_cast<rlim_t>((micros(before.ru_utime) + micros(before.ru_stime)) / 1000000);
    rlim_t soft = used + step.cpu_seconds;
    if (cpu.rlim_max != RLIM_INFINITY && soft > cpu.rlim_max) soft = cpu.rlim_max;
    cpu.rlim_cur = soft;
    ::setrlimit(RLIMIT_CPU, &cpu);
  }
  set_signal_mask(false);
  r_.py->set_int(r_.globals, "_MPES_FILES_FD", files ? kStepFilesFd : -1);
  r_.py->set_int(r_.globals, "_MPES_STEP_NUMBER", static_cast<long long>(step.step_number));
  r_.py->set_int(r_.globals, "_MPES_STEP_CODE", 1);
  r_.py->run_steps(r_.begin, r_.finish, r_.failed, r_.globals);
  const long long code = r_.py->get_int(r_.globals, "_MPES_STEP_CODE", 1);
  set_signal_mask(true);

  // The step is over: its pipes reach EOF, what it started goes. Its slots stay taken.
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd : {1, 2, kStepScriptFd, kStepResultFd, kStepFilesFd}) {
    if (null_fd < 0 || ::dup2(null_fd, fd) < 0) ::close(fd);
  }
  if (null_fd > kStepFilesFd) ::close(null_fd);  // (a lower one is a slot the step freed: kept)
  ::setpgid(0, home_group);
  if (::getpgid(0) != ::getpid()) ::kill(-::getpid(), SIGKILL);  // the rest of the step's group
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  kill_untracked_children();

  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  HolderReadyMessage ready;
  ready.step_id = step.step_id;
  ready.exit_code = static_cast<std::int32_t>(code);
  const int tasks = count_tasks();
  ready.tasks = tasks > 0 ? static_cast<std::uint32_t>(tasks) : 1;
  ready.user_cpu_us = micros(after.ru_utime) - micros(before.ru_utime);
  ready.system_cpu_us = micros(after.ru_stime) - micros(before.ru_stime);
  ready.max_rss_kb = after.ru_maxrss;
  return ready;
}

// The step's processes that left its group (setsid) but are still its children or orphans.
void Holder::kill_untracked_children() {
  siginfo_t info{};
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD) {
    return;  // no child at all (the common case): no need to look through /proc
  }
  const pid_t self = ::getpid();
  for (int round = 0; round < 10000; ++round) {
    std::vector<pid_t> left;
    for (const pid_t child : children_of(self)) {
      if (!tracked(child)) left.push_back(child);
    }
    if (left.empty()) return;
    for (const pid_t child : left) ::kill(child, SIGKILL);
    bool reaped = false;
    for (const pid_t child : left) {
      if (::waitpid(child, nullptr, WNOHANG) == child) reaped = true;
    }
    if (!reaped) ::usleep(1000);
  }
}

void Holder::reap() {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    const pid_t pid = info.si_pid;
    const auto it = steps_.find(pid);
    const bool ours = tracked(pid);
    // What the step started dies with it (the group a step's process made for itself).
    if (ours) ::kill(-pid, SIGKILL);
    int status = 0;
    rusage usage{};
    if (::wait4(pid, &status, 0, &usage) != pid) return;
    if (ours) {
      // A spare's step is the server's to know (it sent it one, or not): named by its pid.
      send_message(kHolderControlFd,
                   StepExitedMessage{it != steps_.end() ? it->second : 0, status, micros(usage.ru_utime),
                                     micros(usage.ru_stime), usage.ru_maxrss, pid});
      if (it != steps_.end()) steps_.erase(it);
      spares_.erase(pid);
    }
  }
}

}  // namespace

void serve_session(const SessionRunner& runner) {
  static Holder holder(runner);  // lives as long as the process; never destroyed
  runner.py->call(runner.start);
  HolderReadyMessage ready;
  const int tasks = count_tasks();
  ready.tasks = tasks > 0 ? static_cast<std::uint32_t>(tasks) : 1;
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  ready.max_rss_kb = self.ru_maxrss;
  holder.serve(ready);
}

}  // namespace engine::zygote
