// The one way the server runs another program (installers, interpreter probes, the host probe,
// the zygote).
//
// Spawning: argv without a shell, exactly the given environment, stdin from /dev/null, stdout and
// stderr into pipes the parent reads, the listed fds at 3, 4, ... and nothing else (every other fd
// is close-on-exec in the child, whoever opened it and how), its own process group, optionally a
// lower identity and host paths staged for it (sandbox/host_staging.h). Between fork and exec the
// child makes only async-signal-safe system calls; a step that fails there is reported back to
// the parent with its errno.
//
// Two uses, one implementation:
//  - blocking (run_process, run_processes): captured output bounded with the tail kept, lines
//    streamed to a callback, a deadline, a KillSwitch another thread may pull, the status;
//  - spawn only (Process::spawn): the caller watches pidfd() and the output pipes on its event
//    loop and calls try_wait() once the pidfd is readable.
// A Process kills its whole group and reaps it when destroyed: no path out of the caller leaves
// a process running or a zombie. A Process belongs to one thread; only KillSwitch crosses threads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/unique_fd.h"

namespace sandbox {

// The identity the child takes before exec: setgroups({}), setresgid, setresuid (needs root).
struct Identity {
  uid_t uid;
  gid_t gid;
};

// Where the child's stdout and stderr go.
enum class Output {
  separate,  // two pipes: ProcessResult::out and ::err (Process::output() and error_output())
  merged,    // one pipe for both, interleaved as written: ProcessResult::out (Process::output())
};

// A resource limit the child sets on itself before exec (setrlimit: soft = hard = value).
struct ResourceLimit {
  int resource;  // RLIMIT_*
  unsigned long long value;
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name found with find_executable ($PATH)
  std::vector<std::string> env;   // the child's whole environment ("K=V")
  std::string cwd;                // "" = the server's
  Output output = Output::separate;
  std::vector<int> fds;           // fds[i] becomes fd 3 + i in the child (the caller keeps its own)
  std::optional<Identity> run_as;
  // With run_as: host paths (absolute, canonical) the new identity must reach although a parent
  // directory is private to the server's (root) identity; staged as sandbox/host_staging.h says.
  std::vector<std::string> reachable_paths;
  std::optional<mode_t> umask;    // nullopt = the server's
  // Open cgroup.procs (v1: tasks) fds the child writes "0" into first, so that it and everything
  // it starts are counted and limited there (sandbox/cgroup.h); the caller keeps them.
  std::vector<int> cgroup_join_fds;
  // A user namespace (open fd) the child joins after its control groups, as its only thread
  // (the server cannot: it is multi-threaded), becoming that namespace's root with every
  // capability there: for a server without root to join a network namespace owned by it (an
  // unprivileged sandbox/user_network.h's). -1 = the server's.
  int userns_fd = -1;
  // A network namespace (open fd) the child joins next, while it still has the server's
  // identity (needs CAP_SYS_ADMIN over it and in its user namespace: the server as root, or
  // userns_fd's owner): e.g. sandbox/user_network.h's. -1 = the server's.
  int netns_fd = -1;
  // Set in the child before exec, after the identity change (so a lowered hard limit binds).
  std::vector<ResourceLimit> rlimits;
  // SIGKILL when the thread that spawned it ends (PR_SET_PDEATHSIG): only for a blocking use on
  // a thread that outlives the run.
  bool die_with_parent = false;
  // Blocking use only: the run is killed (its whole group) this long after it started; 0 = never.
  int timeout_ms = 0;
  // Blocking use only: the most kept of each captured stream (the tail: the end of a log says
  // the most).
  std::size_t max_capture = 1 << 20;
};

// A program that could not be started: not found, or a step before exec failed (the message says
// which, with the system's reason).
struct SpawnError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class KillSwitch;

class Process {
 public:
  // Forks and starts the child; returns at once (it does not wait for the exec). Throws
  // SpawnError when the program is not found or the parent's part fails (pipes, fork, pidfd).
  // With a kill switch, the process group is killed when the switch is pulled (or at once if it
  // was pulled already).
  static Process spawn(const ProcessSpec& spec, KillSwitch* kill_switch = nullptr);

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();  // kill() and reap, unless already reaped

  pid_t pid() const { return pid_; }
  // Readable once the process has exited (close-on-exec; owned by this object).
  int pidfd() const { return pidfd_.get(); }
  // Read ends (non-blocking, close-on-exec) of the stdout pipe (both streams when merged) and of
  // the stderr pipe (invalid when merged). Take them (std::move) to read them elsewhere.
  UniqueFd& output() { return out_; }
  UniqueFd& error_output() { return err_; }

  // SIGKILL to the whole process group; nothing once reaped.
  void kill();
  // Once it has exited: kills what is left of its group, reaps it and returns the wait status;
  // nullopt while it runs. Never blocks.
  std::optional<int> try_wait();
  // Blocks until it exits, then as try_wait().
  int wait();
  bool reaped() const { return reaped_; }
  // Why it never ran: the step before exec that failed and its errno ("" when it exec'd). Blocks
  // until the exec or the exit: call it once the process has exited, or in a blocking use.
  std::string start_error();

 private:
  Process() = default;
  void release_from_switch();
  int reap();

  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string program_;    // argv[0], for messages
  UniqueFd pidfd_;
  UniqueFd out_;
  UniqueFd err_;
  UniqueFd report_;        // the child's pre-exec failure report
  std::optional<std::string> start_error_;
  KillSwitch* kill_switch_ = nullptr;
};

// Lets another thread kill processes that run under it: pulled once, it kills the process groups
// running now and every one started with it later (until reset()). Thread-safe.
class KillSwitch {
 public:
  void kill();
  bool killed() const { return killed_.load(); }
  // Arms it again (for a new use; not while a process runs under it).
  void reset() { killed_ = false; }

 private:
  friend class Process;
  void attach(pid_t pid);
  void detach(pid_t pid);  // before the process is reaped: its group id cannot be reused yet

  std::mutex mutex_;
  std::set<pid_t> pids_;
  std::atomic<bool> killed_{false};
};

struct ProcessResult {
  int exit_code = -1;       // when it exited
  int term_signal = 0;      // when a signal ended it
  bool timed_out = false;   // killed at its deadline
  bool killed = false;      // killed by the kill switch
  std::string out;          // the tail of stdout (of both streams when merged)
  std::string err;          // the tail of stderr
  std::string error;        // run_processes only: why it could not be started ("" = it ran)
  bool ok() const {
    return error.empty() && term_signal == 0 && exit_code == 0 && !timed_out && !killed;
  }
};

using LineCallback = std::function<void(std::string_view line)>;

// Runs one program to its end: on_line sees every complete line of stdout and stderr as it
// comes (and the last unterminated one at the end), without its "\r\n"/"\n". Throws SpawnError
// when it cannot be started.
ProcessResult run_process(const ProcessSpec& spec, const LineCallback& on_line = {},
                          KillSwitch* kill_switch = nullptr);

// Runs several programs, at most `parallel` at a time, each with its own deadline; the results
// in the same order. One that cannot start has its reason in ProcessResult::error.
std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::size_t parallel,
                                         KillSwitch* kill_switch = nullptr);

// This process's own environment, as a ProcessSpec::env ("K=V" each).
std::vector<std::string> inherited_environment();

}  // namespace sandbox
