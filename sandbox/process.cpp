#include "sandbox/process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "sandbox/host_staging.h"
#include "sandbox/path_search.h"

extern char** environ;

namespace sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// After its leader exits, how long a run's output pipes may stay open (held by a process that
// left the group) before they are read one last time and abandoned.
constexpr auto kExitGrace = std::chrono::milliseconds(200);

std::string errno_text(int err) { return std::strerror(err); }

// The steps of the child between fork and exec, for the parent's message.
enum ChildStep : int {
  kStepParent = 1, kStepUserns, kStepNetns, kStepCgroup, kStepStage, kStepIdentity, kStepLimits, kStepFds, kStepChdir, kStepExec
};

const char* step_text(int step) {
  switch (step) {
    case kStepParent: return "following its parent";
    case kStepUserns: return "joining its user namespace";
    case kStepNetns: return "joining its network namespace";
    case kStepCgroup: return "joining its control group";
    case kStepStage: return "staging host paths for the unprivileged identity";
    case kStepIdentity: return "dropping to the unprivileged identity";
    case kStepLimits: return "setting its resource limits";
    case kStepFds: return "setting up its file descriptors";
    case kStepChdir: return "changing directory";
    default: return "exec";
  }
}

// Everything the child uses, prepared before fork: after fork (the server has threads) only
// async-signal-safe system calls are allowed, so nothing below allocates.
struct ChildPlan {
  const char* program = nullptr;
  std::vector<char*> argv, env;
  const char* cwd = nullptr;
  std::vector<int> sources;  // sources[i] becomes fd i: stdin, stdout, stderr, then spec.fds
  std::vector<int> moved;    // scratch, one per source
  int report = -1;           // write end of the failure report (close-on-exec)
  const HostStaging* staging = nullptr;
  std::vector<int> held;     // scratch, one per staged path
  std::vector<std::array<char, 32>> held_names;  // scratch: "/proc/self/fd/N"
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
  bool set_umask = false;
  mode_t umask = 022;
  bool die_with_parent = false;
  pid_t parent = 0;
  int userns_fd = -1;
  int netns_fd = -1;
  const std::vector<int>* cgroup_join_fds = nullptr;
  const std::vector<ResourceLimit>* rlimits = nullptr;
};

[[noreturn]] void child_fail(int report, int step, int err) {
  const int message[2] = {step, err};
  [[maybe_unused]] ssize_t n = ::write(report, message, sizeof message);
  ::_exit(127);
}

void format_fd_path(std::array<char, 32>& out, int fd) {
  static constexpr char kPrefix[] = "/proc/self/fd/";
  std::size_t at = 0;
  for (char c : std::string_view(kPrefix)) out[at++] = c;
  char digits[12];
  int len = 0;
  for (int v = fd; len == 0 || v > 0; v /= 10) digits[len++] = static_cast<char>('0' + v % 10);
  while (len > 0) out[at++] = digits[--len];
  out[at] = '\0';
}

// A private mount namespace in which each staged path is reachable again (see HostStaging).
void stage_host_paths(ChildPlan& p) {
  const HostStaging& s = *p.staging;
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    child_fail(p.report, kStepStage, errno);
  }
  // Held by fd before the tmpfs hides them (a bind source must be in this mount namespace, so
  // they are opened here, not in the parent).
  for (std::size_t i = 0; i < s.bound_paths.size(); ++i) {
    p.held[i] = ::open(s.bound_paths[i].c_str(), O_PATH | O_CLOEXEC);
    if (p.held[i] < 0) child_fail(p.report, kStepStage, errno);
    format_fd_path(p.held_names[i], p.held[i]);
  }
  for (const auto& point : s.hide_points) {
    if (::mount("tmpfs", point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
      child_fail(p.report, kStepStage, errno);
    }
  }
  for (const auto& dir : s.dirs) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) child_fail(p.report, kStepStage, errno);
  }
  for (const auto& file : s.files) {
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) child_fail(p.report, kStepStage, errno);
    ::close(fd);
  }
  for (std::size_t i = 0; i < s.bound_paths.size(); ++i) {
    if (::mount(p.held_names[i].data(), s.bound_paths[i].c_str(), nullptr, MS_BIND | MS_REC,
                nullptr) != 0) {
      child_fail(p.report, kStepStage, errno);
    }
    ::close(p.held[i]);
  }
}

[[noreturn]] void exec_child(ChildPlan& p) {
  // Its own process group, so that one kill reaches everything it starts.
  ::setpgid(0, 0);
  // Default dispositions and an empty mask: the server's own choices (an ignored SIGPIPE, blocked
  // signals) are not the child's. exec resets handled signals, not ignored or blocked ones.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (p.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL) != 0) child_fail(p.report, kStepParent, errno);
    if (::getppid() != p.parent) ::_exit(127);  // the parent is already gone
  }
  // Control groups first: their files are the server's to write, in its own user namespace.
  for (int fd : *p.cgroup_join_fds) {
    if (::write(fd, "0", 1) != 1) child_fail(p.report, kStepCgroup, errno);
  }
  if (p.userns_fd >= 0 && ::setns(p.userns_fd, CLONE_NEWUSER) != 0) child_fail(p.report, kStepUserns, errno);
  if (p.netns_fd >= 0 && ::setns(p.netns_fd, CLONE_NEWNET) != 0) child_fail(p.report, kStepNetns, errno);
  if (p.staging != nullptr) stage_host_paths(p);
  if (p.drop) {
    // Raw system calls: this (only) thread's ids, without glibc's all-threads broadcast.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
        ::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0 ||
        ::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) {
      child_fail(p.report, kStepIdentity, errno);
    }
  }
  for (const ResourceLimit& limit : *p.rlimits) {
    const struct rlimit value = {static_cast<rlim_t>(limit.value), static_cast<rlim_t>(limit.value)};
    if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) != 0) {
      child_fail(p.report, kStepLimits, errno);
    }
  }
  // Every source is lifted above the target range first, then put in place (dup2 clears
  // close-on-exec on the target); the report pipe is lifted too, so no dup2 lands on it.
  const int targets = static_cast<int>(p.sources.size());
  const int report = ::fcntl(p.report, F_DUPFD_CLOEXEC, targets);
  if (report < 0) child_fail(p.report, kStepFds, errno);
  p.report = report;
  for (std::size_t i = 0; i < p.sources.size(); ++i) {
    p.moved[i] = ::fcntl(p.sources[i], F_DUPFD_CLOEXEC, targets);
    if (p.moved[i] < 0) child_fail(p.report, kStepFds, errno);
  }
  for (std::size_t i = 0; i < p.moved.size(); ++i) {
    if (::dup2(p.moved[i], static_cast<int>(i)) < 0) child_fail(p.report, kStepFds, errno);
  }
  // Whatever another thread opened without O_CLOEXEC (a careless library) does not cross exec.
  if (::syscall(SYS_close_range, static_cast<unsigned>(targets), ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    child_fail(p.report, kStepFds, errno);
  }
  if (p.cwd != nullptr && ::chdir(p.cwd) != 0) child_fail(p.report, kStepChdir, errno);
  if (p.set_umask) ::umask(p.umask);
  ::execve(p.program, p.argv.data(), p.env.data());
  child_fail(p.report, kStepExec, errno);
}

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SpawnError("cannot create a pipe: " + errno_text(errno));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Process

Process Process::spawn(const ProcessSpec& spec, KillSwitch* kill_switch) {
  if (spec.argv.empty()) throw SpawnError("cannot run an empty command");
  Process process;
  process.program_ = spec.argv[0];
  std::string program = spec.argv[0];
  if (program.find('/') == std::string::npos) {
    auto found = find_executable(program);
    if (!found) {
      throw SpawnError("cannot run " + program + ": not found in the search path (" +
                       search_path() + ")");
    }
    program = *found;
  }

  ChildPlan plan;
  plan.program = program.c_str();
  for (const auto& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const auto& e : spec.env) plan.env.push_back(const_cast<char*>(e.c_str()));
  plan.env.push_back(nullptr);
  if (!spec.cwd.empty()) plan.cwd = spec.cwd.c_str();
  plan.set_umask = spec.umask.has_value();
  plan.umask = spec.umask.value_or(022);
  plan.die_with_parent = spec.die_with_parent;
  plan.parent = ::getpid();
  plan.userns_fd = spec.userns_fd;
  plan.netns_fd = spec.netns_fd;
  plan.cgroup_join_fds = &spec.cgroup_join_fds;
  plan.rlimits = &spec.rlimits;

  HostStaging staging;
  if (spec.run_as) {
    plan.drop = true;
    plan.uid = spec.run_as->uid;
    plan.gid = spec.run_as->gid;
    if (::geteuid() == 0 && !spec.reachable_paths.empty()) {
      try {
        staging = plan_host_staging(spec.reachable_paths);
      } catch (const std::runtime_error& e) {
        throw SpawnError("cannot run " + spec.argv[0] + ": " + e.what());
      }
      if (!staging.empty()) {
        plan.staging = &staging;
        plan.held.resize(staging.bound_paths.size(), -1);
        plan.held_names.resize(staging.bound_paths.size());
      }
    }
  }

  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw SpawnError("cannot open /dev/null: " + errno_text(errno));
  auto [out_read, out_write] = make_pipe();
  UniqueFd err_read, err_write;
  if (spec.output == Output::separate) std::tie(err_read, err_write) = make_pipe();
  auto [report_read, report_write] = make_pipe();
  plan.report = report_write.get();
  plan.sources = {devnull.get(), out_write.get(), err_write ? err_write.get() : out_write.get()};
  plan.sources.insert(plan.sources.end(), spec.fds.begin(), spec.fds.end());
  plan.moved.resize(plan.sources.size(), -1);

  const pid_t pid = ::fork();
  if (pid < 0) throw SpawnError("cannot run " + spec.argv[0] + ": fork: " + errno_text(errno));
  if (pid == 0) exec_child(plan);

  // Parent. From here on the destructor kills and reaps it, whatever happens.
  process.pid_ = pid;
  ::setpgid(pid, pid);  // also here: a kill of the group right away must reach it (EACCES once it exec'd)
  process.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!process.pidfd_) {
    throw SpawnError("cannot watch " + spec.argv[0] + ": pidfd_open (Linux >= 5.3 is required): " +
                     errno_text(errno));
  }
  for (UniqueFd* fd : {&out_read, &err_read}) {
    if (*fd) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  }
  process.out_ = std::move(out_read);
  process.err_ = std::move(err_read);
  process.report_ = std::move(report_read);
  if (kill_switch != nullptr) {
    process.kill_switch_ = kill_switch;
    kill_switch->attach(pid);
  }
  return process;
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      reaped_(std::exchange(other.reaped_, true)),
      wait_status_(other.wait_status_),
      program_(std::move(other.program_)),
      pidfd_(std::move(other.pidfd_)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      report_(std::move(other.report_)),
      start_error_(std::move(other.start_error_)),
      kill_switch_(std::exchange(other.kill_switch_, nullptr)) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    Process gone(std::move(*this));  // killed and reaped at the end of this scope
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = std::exchange(other.reaped_, true);
    wait_status_ = other.wait_status_;
    program_ = std::move(other.program_);
    pidfd_ = std::move(other.pidfd_);
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
    report_ = std::move(other.report_);
    start_error_ = std::move(other.start_error_);
    kill_switch_ = std::exchange(other.kill_switch_, nullptr);
  }
  return *this;
}

Process::~Process() {
  if (pid_ <= 0 || reaped_) return;
  kill();
  reap();
}

void Process::kill() {
  if (pid_ <= 0 || reaped_) return;
  // The group first (what it started), then the leader (in case it had not joined its group yet).
  // Safe from reuse: the ids stay ours until the leader is reaped, here.
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
}

void Process::release_from_switch() {
  if (kill_switch_ != nullptr) kill_switch_->detach(pid_);
  kill_switch_ = nullptr;
}

int Process::reap() {
  // What is left of its group goes with it (the group id is still ours: the leader is a zombie).
  ::kill(-pid_, SIGKILL);
  release_from_switch();
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  // ECHILD: reaped by the kernel (SIGCHLD ignored by the server): the status is lost.
  wait_status_ = r == pid_ ? status : W_EXITCODE(255, 0);
  reaped_ = true;
  return wait_status_;
}

std::optional<int> Process::try_wait() {
  if (reaped_) return wait_status_;
  if (pid_ <= 0) return std::nullopt;
  // Look without reaping, so that the group can still be killed safely.
  siginfo_t info{};
  const int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if ((r == 0 && info.si_pid == pid_) || (r < 0 && errno == ECHILD)) return reap();
  return std::nullopt;
}

int Process::wait() {
  if (reaped_) return wait_status_;
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  return reap();
}

std::string Process::start_error() {
  if (start_error_) return *start_error_;
  int message[2] = {0, 0};
  ssize_t n = -1;
  if (report_) {
    // Blocking: the write end closes at exec (close-on-exec) or at exit.
    const int flags = ::fcntl(report_.get(), F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) != 0) ::fcntl(report_.get(), F_SETFL, flags & ~O_NONBLOCK);
    do {
      n = ::read(report_.get(), message, sizeof message);
    } while (n < 0 && errno == EINTR);
    report_.reset();
  }
  if (n != static_cast<ssize_t>(sizeof message)) {
    start_error_ = "";
  } else if (message[0] == kStepExec) {
    start_error_ = "cannot run " + program_ + ": " + errno_text(message[1]);
  } else {
    start_error_ = "cannot run " + program_ + " (" + step_text(message[0]) + "): " +
                   errno_text(message[1]);
  }
  return *start_error_;
}

// ---------------------------------------------------------------------------------------------
// KillSwitch

void KillSwitch::kill() {
  std::lock_guard lock(mutex_);
  killed_ = true;
  for (pid_t pid : pids_) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
}

void KillSwitch::attach(pid_t pid) {
  std::lock_guard lock(mutex_);
  pids_.insert(pid);
  if (killed_) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
}

void KillSwitch::detach(pid_t pid) {
  std::lock_guard lock(mutex_);
  pids_.erase(pid);
}

// ---------------------------------------------------------------------------------------------
// Blocking runs

namespace {

// Keeps the last `cap` bytes of a stream and hands its lines to a callback.
struct Sink {
  std::size_t cap = 0;
  const LineCallback* on_line = nullptr;
  std::string kept;
  std::string partial;

  void add(std::string_view data) {
    if (data.size() >= cap) {
      kept.assign(data.substr(data.size() - cap));
    } else {
      if (kept.size() + data.size() > cap) kept.erase(0, kept.size() + data.size() - cap);
      kept.append(data);
    }
    if (on_line == nullptr || !*on_line) return;
    partial.append(data);
    std::size_t start = 0;
    for (std::size_t nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n', start)) {
      std::string_view line(partial.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      (*on_line)(line);
      start = nl + 1;
    }
    partial.erase(0, start);
    // A line without an end (a progress bar) must not grow without bound.
    if (partial.size() > 65536) partial.clear();
  }
  void finish() {
    if (!partial.empty() && on_line != nullptr && *on_line) (*on_line)(partial);
    partial.clear();
  }
};

struct Job {
  const ProcessSpec* spec = nullptr;
  std::optional<Process> process;
  Sink out, err;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point exited_at{};
  ProcessResult result;
  bool done = false;
};

// Reads what is there now (a bounded number of times, so one busy writer cannot starve the
// others); closes the fd at the end of the stream.
void read_available(UniqueFd& fd, Sink& sink) {
  std::array<char, 65536> buffer{};
  for (int round = 0; fd && round < 16; ++round) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      sink.add(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fd.reset();  // end of stream, or an error that will not go away
  }
}

void finish(Job& job, KillSwitch* kill_switch) {
  Process& p = *job.process;
  read_available(p.output(), job.out);
  read_available(p.error_output(), job.err);
  job.out.finish();
  job.err.finish();
  const int status = *p.try_wait();
  if (WIFEXITED(status)) job.result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) job.result.term_signal = WTERMSIG(status);
  job.result.killed = kill_switch != nullptr && kill_switch->killed();
  job.result.out = std::move(job.out.kept);
  job.result.err = std::move(job.err.kept);
  job.result.error = p.start_error();
  job.process.reset();
  job.done = true;
}

void run_jobs(std::vector<Job>& jobs, std::size_t parallel, KillSwitch* kill_switch) {
  parallel = std::max<std::size_t>(parallel, 1);
  std::vector<Job*> running;
  std::size_t next = 0;
  while (true) {
    while (running.size() < parallel && next < jobs.size()) {
      Job& job = jobs[next++];
      try {
        job.process.emplace(Process::spawn(*job.spec, kill_switch));
        if (job.spec->timeout_ms > 0) {
          job.deadline = Clock::now() + std::chrono::milliseconds(job.spec->timeout_ms);
        }
        running.push_back(&job);
      } catch (const SpawnError& e) {
        job.result.error = e.what();
        job.done = true;
      }
    }
    if (running.empty()) break;

    std::vector<pollfd> fds;
    std::vector<std::pair<Job*, int>> owners;  // 0: pidfd, 1: stdout, 2: stderr
    auto now = Clock::now();
    auto wait = Clock::duration::max();
    for (Job* job : running) {
      Process& p = *job->process;
      if (!p.reaped()) {
        fds.push_back({p.pidfd(), POLLIN, 0});
        owners.emplace_back(job, 0);
        if (!job->result.timed_out && job->deadline != Clock::time_point::max()) {
          wait = std::min(wait, std::max(Clock::duration::zero(), job->deadline - now));
        }
      } else {
        wait = std::min(wait, std::max(Clock::duration::zero(), job->exited_at + kExitGrace - now));
      }
      if (p.output()) {
        fds.push_back({p.output().get(), POLLIN, 0});
        owners.emplace_back(job, 1);
      }
      if (p.error_output()) {
        fds.push_back({p.error_output().get(), POLLIN, 0});
        owners.emplace_back(job, 2);
      }
    }
    const int timeout =
        wait == Clock::duration::max()
            ? -1
            : static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) throw std::runtime_error("poll: " + errno_text(errno));
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [job, which] = owners[i];
      if (which == 1) read_available(job->process->output(), job->out);
      if (which == 2) read_available(job->process->error_output(), job->err);
    }

    now = Clock::now();
    for (Job* job : running) {
      Process& p = *job->process;
      if (!p.reaped()) {
        if (p.try_wait()) {
          job->exited_at = now;
        } else if (!job->result.timed_out && now >= job->deadline) {
          job->result.timed_out = true;
          p.kill();
        }
      }
      if (p.reaped() && ((!p.output() && !p.error_output()) || now >= job->exited_at + kExitGrace)) {
        finish(*job, kill_switch);
      }
    }
    std::erase_if(running, [](const Job* job) { return job->done; });
  }
}

}  // namespace

std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::size_t parallel,
                                         KillSwitch* kill_switch) {
  std::vector<Job> jobs(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    jobs[i].spec = &specs[i];
    jobs[i].out.cap = jobs[i].err.cap = std::max<std::size_t>(specs[i].max_capture, 1);
  }
  run_jobs(jobs, parallel, kill_switch);
  std::vector<ProcessResult> results;
  results.reserve(jobs.size());
  for (Job& job : jobs) results.push_back(std::move(job.result));
  return results;
}

ProcessResult run_process(const ProcessSpec& spec, const LineCallback& on_line,
                          KillSwitch* kill_switch) {
  std::vector<Job> jobs(1);
  jobs[0].spec = &spec;
  jobs[0].out.cap = jobs[0].err.cap = std::max<std::size_t>(spec.max_capture, 1);
  jobs[0].out.on_line = jobs[0].err.on_line = &on_line;
  run_jobs(jobs, 1, kill_switch);
  if (!jobs[0].result.error.empty()) throw SpawnError(jobs[0].result.error);
  return std::move(jobs[0].result);
}

std::vector<std::string> inherited_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace sandbox
