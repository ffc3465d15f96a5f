// The zygote: a small single-threaded process that loads one interpreter's libpython at run
// time, warms it (boot stub, preloads, gc.freeze), then forks one disposable child per run on
// request from the server (engine/zygote/protocol.h). It never runs user code itself.
//
// Per run (native backend):
//   zygote --clone(new user/pid/mount/ipc/uts/cgroup[/net] namespaces)--> init (pid 1)
//     (--network routed: a network namespace per run, which the server links into the zygote's
//     user-mode network while the run is a spare: SPARE, then SPARE_LINKED; only a linked spare
//     takes a run, and a run that finds none waits for one)
//     init: id maps, mounts; fork --> script process: identity, landlock scoping, seccomp (all
//           while a spare), then cgroup join, rlimits, runner stub (the script); init then only reaps and reports the
//           script's status through a per-run status pipe, so a script dying of a signal is
//           reported as such (a session's init: once its last process has ended).
//   (--direct-spares 1: each spare is announced with SPARE and its hand-off socket; the server
//   sends the run to it itself and tells us with TAKEN, so a run does not wake the zygote on its
//   way in. Runs the server has no spare for still come as RUN.)
// With the none backend: zygote --fork--> init (a subreaper, in a fresh temporary work dir)
//   --fork--> script process; when the script ends the init kills what the run left running.
//
// No spdlog here: diagnostics go to stderr, which the server reads and logs.
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/zygote/children.h"
#include "engine/zygote/libpython.h"
#include "engine/zygote/protocol.h"
#include "engine/zygote/session_holder.h"
#include "engine/zygote/session_signal.h"
#include "engine/zygote/spare_policy.h"
#include "engine/zygote/written_pages.h"
#include "python_stubs/mpes_python_stubs.h"
#include "sandbox/child_setup.h"
#include "sandbox/landlock.h"
#include "sandbox/memfd.h"
#include "sandbox/mounts.h"
#include "sandbox/namespaces.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

namespace {

namespace z = engine::zygote;
using sandbox::UniqueFd;
using z::children_of;
using z::count_tasks;
using z::kill_children_until_none;
using z::pages_written_by;
using z::take_copies;

// Exit status of a run process whose sandbox setup failed (the status pipe says so; the code
// itself is never shown as the script's).
constexpr int kSetupFailedExit = 125;

struct Options {
  std::string libpython;
  std::string spawn_executable;  // no shared libpython: each run execs this interpreter
  std::string home;        // PYTHONHOME: the interpreter's prefix
  std::string executable;  // sys.executable for scripts
  std::string run_path;    // $PATH of runs
  std::string preload;     // comma-separated modules
  std::string sys_path;    // the interpreter's own sys.path, newline-separated ("" = computed)
  std::string prefix;      // sys.prefix when it differs from the home (a venv)
  bool isolate = true;     // native and docker backends
  bool network = true;
  bool routed = false;  // --network routed: network on, a namespace per run linked by the server
  sandbox::Limits limits;
  sandbox::RlimitFallbacks fallbacks;
  sandbox::UserQuotas user_quotas;
  unsigned spares = 2;  // run children prepared ahead of their runs
  bool direct_spares = false;  // spares are announced to the server, which hands runs to them
  std::uint64_t max_value_bytes = 102400;  // the runner's bound on a value's repr and JSON
  unsigned max_images = 4;                 // figures a run returns at most
  std::vector<std::string> argv;  // as started: the zygote starts itself again with fewer preloads
  std::string preload_dir;        // home and cwd of preloads' imports
  std::string connect;            // --connect: the control socket's path (docker backend)
  // Unsandboxed: where the runs', the rehearsal's and the preloads' work dirs are made. The
  // server gives each zygote a directory of its own, and removes it once the zygote is reaped.
  std::string work_root = "/tmp";
};

int remove_entry(const char* path, const struct stat*, int, FTW*) {
  ::remove(path);
  return 0;
}

// Unsandboxed runs and preloads work in temporary directories of ours: removed with what they hold.
void remove_tree(const std::string& dir) {
  if (!dir.empty()) ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

// Unsandboxed, the preloads' home is a temporary directory of ours.
void remove_preload_dir(const Options& options) {
  if (!options.isolate && !options.preload_dir.empty()) {
    remove_tree(options.preload_dir);
  }
}

// The environment the zygote was started with, for starting itself again.
std::vector<std::string> g_start_environment;

void log(const std::string& text) {
  const std::string line = "zygote: " + text + "\n";
  [[maybe_unused]] const ssize_t n = ::write(2, line.data(), line.size());
}

[[noreturn]] void usage(const std::string& problem) {
  log(problem);
  log("usage: mcp-python-exec-sandbox-zygote (--libpython PATH | --spawn-executable PATH) --home PREFIX [--executable PATH] "
      "[--run-path PATH] [--preload A,B] [--sys-path DIRS] [--prefix DIR] [--spares N] [--max-value-bytes N] [--max-images N] [--backend native|docker|none] [--network on|off|routed] "
      "[--tmpfs-bytes N] [--memory-bytes N] [--max-processes N] [--cpu-seconds N] "
      "[--file-size-bytes N] [--open-files N] [--rlimit-memory 0|1] [--rlimit-processes 0|1] "
      "[--inotify-instances N] [--inotify-watches N] [--pending-signals N] [--connect SOCKET] [--work-root DIR] (control socket on fd 3, or connected to SOCKET; started by mcp-python-exec-sandbox)");
  std::exit(2);
}

std::uint64_t number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') usage("bad number for " + flag + ": " + text);
  return v;
}

Options parse_options(int argc, char** argv) {
  Options o;
  o.argv.assign(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--libpython") o.libpython = value;
    else if (flag == "--spawn-executable") o.spawn_executable = value;
    else if (flag == "--home") o.home = value;
    else if (flag == "--executable") o.executable = value;
    else if (flag == "--run-path") o.run_path = value;
    else if (flag == "--preload") o.preload = value;
    else if (flag == "--sys-path") o.sys_path = value;
    else if (flag == "--prefix") o.prefix = value;
    else if (flag == "--spares") o.spares = static_cast<unsigned>(std::min<std::uint64_t>(8, number(flag, value)));
    else if (flag == "--max-value-bytes") o.max_value_bytes = number(flag, value);
    else if (flag == "--max-images") o.max_images = static_cast<unsigned>(std::min<std::uint64_t>(64, number(flag, value)));
    else if (flag == "--backend") o.isolate = value != "none";
    else if (flag == "--network") {
      if (value != "on" && value != "off" && value != "routed") usage("--network is on, off or routed");
      o.network = value != "off";
      o.routed = value == "routed";
    }
    else if (flag == "--tmpfs-bytes") o.limits.tmpfs_bytes = number(flag, value);
    else if (flag == "--memory-bytes") o.limits.memory_bytes = number(flag, value);
    else if (flag == "--max-processes") o.limits.max_processes = static_cast<std::uint32_t>(number(flag, value));
    else if (flag == "--cpu-seconds") o.limits.cpu_seconds = static_cast<std::uint32_t>(number(flag, value));
    else if (flag == "--file-size-bytes") o.limits.file_size_bytes = number(flag, value);
    else if (flag == "--open-files") o.limits.open_files = static_cast<std::uint32_t>(number(flag, value));
    else if (flag == "--rlimit-memory") o.fallbacks.memory = value != "0";
    else if (flag == "--rlimit-processes") o.fallbacks.processes = value != "0";
    else if (flag == "--inotify-instances") o.user_quotas.inotify_instances = number(flag, value);
    else if (flag == "--inotify-watches") o.user_quotas.inotify_watches = number(flag, value);
    else if (flag == "--pending-signals") o.user_quotas.pending_signals = number(flag, value);
    else if (flag == "--connect") o.connect = value;
    else if (flag == "--work-root") o.work_root = value;
    else if (flag == "--direct-spares") o.direct_spares = value != "0";
    else usage("unknown option " + flag);
  }
  if ((o.libpython.empty() && o.spawn_executable.empty()) || o.home.empty()) {
    usage("--home and one of --libpython / --spawn-executable are required");
  }
  if (!o.connect.empty()) {
    // Started again (fewer preloads), the zygote keeps the connection it has on fd 3.
    const auto at = std::find(o.argv.begin(), o.argv.end(), "--connect");
    o.argv.erase(at, at + 2);
  }
  return o;
}

std::uint64_t own_rss_bytes() {
  UniqueFd fd(::open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
  if (!fd) return 0;
  char buf[128] = {};
  if (::read(fd.get(), buf, sizeof buf - 1) <= 0) return 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// One record on a run's status pipe (init -> zygote), written atomically (< PIPE_BUF).
struct StatusRecord {
  enum Kind : std::uint32_t { script_exited = 1, setup_failed = 2 };
  std::uint32_t kind = 0;
  std::int32_t wait_status = 0;
  // script_exited: usage of the processes the init reaped up to the script's exit.
  std::int64_t user_cpu_us = 0;
  std::int64_t system_cpu_us = 0;
  std::int64_t max_rss_kb = 0;
  char text[232] = {};
};
static_assert(sizeof(StatusRecord) <= PIPE_BUF);

// A flag of our own in Child::exited (never sent): the init's record of the script's end arrived.
constexpr std::uint32_t kScriptEnded = 1u << 31;

constexpr int kHandoffFd = 3;  // in a spare's processes, until its run arrives
constexpr int kStatusFd = 4;   // in the run's processes, while setting up

// learn_run_pages: what its rehearsal runs (the runner's whole path, with the report of an
// uncaught exception: a run that fails writes what one that succeeds does, and more), how long
// the zygote waits for it, and how much of what it wrote each spare copies, this much at a time
// between looks at its hand-off socket.
constexpr std::string_view kRehearsalScript =
    "import os, sys as system\n"
    "from collections import OrderedDict\n"
    "squares = [i * i for i in range(4) if i % 2 == 0]\n"
    "table = {key: value for key, value in zip('ab', (1, 2.5))}\n"
    "unique = {len(squares), -1}\n"
    "text = f\"{squares[0]!r:>4} {table['a']:.2f}\" + 'x' * 2\n"
    "class Shape:\n"
    "    sides: int = 0\n"
    "    def __init__(self, *args, name='shape', **kwargs):\n"
    "        self.name = name\n"
    "    def area(self):\n"
    "        return self.sides ** 2 / 3 // 1\n"
    "with open(__file__) as source:\n"
    "    lines = source.read().splitlines()\n"
    "for n in range(3):\n"
    "    if n > 1 and not False or None:\n"
    "        break\n"
    "    while n < 0:\n"
    "        continue\n"
    "try:\n"
    "    value = table['missing']\n"
    "except (KeyError, IndexError) as error:\n"
    "    value = lambda x: x\n"
    "finally:\n"
    "    del n\n"
    "assert squares, 'none'\n"
    "first, *rest = squares[1:3]\n"
    "print(text, Shape(name='square').area(), sorted(unique), len(lines), system.version_info >= (3,))\n"
    "def rehearsal():\n"
    "    raise ValueError('rehearsal')\n"
    "rehearsal()\n";
constexpr int kRehearsalWaitMs = 1000;
constexpr std::size_t kRunPagesBytes = 2 << 20;
constexpr std::size_t kRunPagesSliceBytes = 256 << 10;

void write_record(const StatusRecord& record) {
  [[maybe_unused]] const ssize_t n = ::write(kStatusFd, &record, sizeof record);
}

[[noreturn]] void setup_failed(const char* what) {
  StatusRecord record;
  record.kind = StatusRecord::setup_failed;
  std::snprintf(record.text, sizeof record.text, "%s", what);
  write_record(record);
  // The run's stderr says it too, for whoever reads the output.
  const std::string line = std::string("sandbox setup failed: ") + what + "\n";
  [[maybe_unused]] const ssize_t n = ::write(2, line.data(), line.size());
  ::_exit(kSetupFailedExit);
}

// SIGTERM in an unsandboxed run's init (its zygote is gone): the script is killed from the
// handler itself, so that the init's wait for it ends whenever the signal came (a flag alone
// is missed when it is set just before wait4 blocks, and the run would be left running).
volatile sig_atomic_t g_terminate = 0;
volatile sig_atomic_t g_script = 0;  // the script's pid once forked
void note_terminate(int) {
  const int saved = errno;
  g_terminate = 1;
  if (g_script > 0) ::kill(static_cast<pid_t>(g_script), SIGKILL);
  errno = saved;
}

// A sandboxed run's init that holds a session (engine/zygote/session_signal.h).
volatile sig_atomic_t g_session_init = 0;
void note_session(int, siginfo_t* info, void*) {
  if (z::sent_by_zygote(*info)) g_session_init = 1;
}

// A run's init: reaps every process of the run until the script itself has ended (a session's
// init: until no process is left), adding up the CPU and peak memory of each. True with the
// script's wait status in `record`; false when waiting failed, or when SIGTERM (unsandboxed
// runs' inits) asked the init to stop first.
bool reap_until_script_ends(pid_t script, StatusRecord& record) {
  record.kind = StatusRecord::script_exited;
  bool script_ended = false;
  for (;;) {
    int status = 0;
    rusage usage{};
    const pid_t p = ::wait4(-1, &status, 0, &usage);
    if (p > 0) {
      record.user_cpu_us += usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec;
      record.system_cpu_us += usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
      record.max_rss_kb = std::max<std::int64_t>(record.max_rss_kb, usage.ru_maxrss);
    }
    if (p == script) {
      record.wait_status = status;
      if (!g_session_init) return true;
      script_ended = true;
    }
    if (p < 0 && errno == ECHILD && script_ended) return true;
    if (p < 0 && (errno != EINTR || g_terminate)) return false;
  }
}

class Zygote {
 public:
  Zygote(Options options, std::optional<engine::LibPython> python)
      : options_(std::move(options)), py_(python) {}

  int start();

 private:
  struct Child {
    std::uint64_t run_id = 0;
    UniqueFd status;       // read end of the run's status pipe
    std::string work_dir;  // none backend: the temporary work dir to remove
    bool taken = true;        // has its run (false: a direct spare reaped before TAKEN came)
    bool reported = false;    // EXITED already sent (from the init's record)
    bool status_eof = false;  // nothing more will come on `status`
    std::optional<z::ExitedMessage> exited;  // what the records said so far
  };

  // A run's child forked ahead of its run: namespaces, mounts and the runner's preparation are
  // done, the script's process waits on the hand-off socket for the run's fds.
  struct Spare {
    pid_t pid = -1;        // the run's init
    UniqueFd pidfd;
    UniqueFd handoff;      // our end of the hand-off socket
    UniqueFd status;       // read end of the run's status pipe
    std::string work_dir;  // none backend
    bool linked = true;    // --network routed: false until the server has linked its network
    bool direct = false;   // announced to the server with its hand-off socket: the server's to use
  };
  // The run a spare has taken (run_id), or is about to (`taken` false): its status pipe and work
  // dir move over.
  static Child child_of(Spare& spare, std::uint64_t run_id, bool taken = true) {
    Child child;
    child.run_id = run_id;
    child.taken = taken;
    child.status = std::move(spare.status);
    child.work_dir = spare.work_dir;
    return child;
  }
  // A direct spare reaped before the server's TAKEN for it was read: its end, until TAKEN says
  // which run it was (or it is forgotten, oldest first).
  struct EarlyExit {
    Child child;
    int status = 0;
    rusage usage{};
  };
  // A run that found no linked spare (--network routed), until one is.
  struct Pending {
    z::RunMessage run;
    std::vector<UniqueFd> fds;
  };

  bool boot_interpreter(int report_fd, std::string& warnings);
  // Execs the zygote again with the same arguments minus `dropped` preloads; returns only when
  // that fails (logged).
  void restart_without(const std::vector<std::string>& dropped, const std::string& notes);
  // The runner's result limits, as Python assignments appended to its source.
  std::string result_limits_source() const {
    return "\n_MPES_MAX_VALUE_BYTES = " + std::to_string(options_.max_value_bytes) +
           "\n_MPES_MAX_IMAGES = " + std::to_string(options_.max_images) + "\n";
  }
  void handle_control();
  // direct: announced to the server (SPARE + its hand-off socket), which hands it a run itself.
  bool create_spare(bool direct);
  void top_up_spares();
  // After a run took a spare: a replacement now or after its EXITED (spare_policy.h).
  void replace_taken_spare();
  void handle_run(const z::RunMessage& run, std::vector<UniqueFd> fds);
  // Hands the run to the oldest linked spare; false when there is none (the run is not taken).
  bool dispatch(const z::RunMessage& run, std::vector<UniqueFd>& fds);
  void handle_spare_linked(const z::SpareLinkedMessage& linked);
  void handle_taken(const z::TakenMessage& taken);
  // --network routed: the oldest waiting run is refused with `reason` (its spare failed), and a
  // spare is made for the others if none is coming.
  void refuse_pending(const std::string& reason);
  void dispatch_pending();
  void reap();
  // A run's init was reaped: EXITED unless the init's record already answered. True when the
  // run may have left processes to us (unsandboxed).
  bool child_reaped(Child& child, int status, const rusage& usage);
  void read_status(Child& child);
  void send_exited(Child& child, z::ExitedMessage exited);
  void refuse(std::uint64_t run_id, const std::string& reason);
  [[noreturn]] void run_init(const sandbox::ChildSpec& spec);
  [[noreturn]] void run_plain_init(const sandbox::ChildSpec& spec, const std::string& work_dir, pid_t zygote);
  void kill_strays();
  [[noreturn]] void run_script(sandbox::ChildSpec spec);
  // The C environment of a run's script process (its cwd the work dir).
  void set_run_environment();
  // A rehearsal run of the zygote's own (kRehearsalScript, unsandboxed: no user code), forked
  // once after READY; the pages it wrote become run_pages_, which every spare copies before
  // its run arrives (written_pages.h), so that a run meets few copy-on-write faults.
  void learn_run_pages();
  void kill_all_children();
  // False when `pid` was no spare (a stray of an unsandboxed run, re-parented to us).
  bool reap_spare(pid_t pid, int status);

  Options options_;
  std::optional<engine::LibPython> py_;  // empty on the spawn path
  std::optional<sandbox::SeccompProgram> seccomp_;
  void* prepare_fn_ = nullptr;  // the runner's functions (borrowed references)
  void* begin_fn_ = nullptr;
  void* finish_fn_ = nullptr;
  void* failed_fn_ = nullptr;
  void* runner_globals_ = nullptr;  // the runner's module dict (the zygote's __main__)
  z::SessionRunner session_runner_;  // the runner's session functions
  UniqueFd signal_fd_;
  std::map<pid_t, Child> children_;
  // Prepared ahead, oldest (most likely done preparing) first: a run handed to a spare still
  // preparing waits for it, so back-to-back runs need more than one in the pipeline.
  std::deque<Spare> spares_;
  std::map<pid_t, Spare> abandoned_;  // spares that died before taking their run
  std::deque<std::pair<pid_t, EarlyExit>> early_exits_;  // bounded: kMaxEarlyExits
  static constexpr std::size_t kMaxEarlyExits = 16;
  std::deque<Pending> pending_;       // --network routed: runs waiting for a linked spare
  std::string spare_error_;
  sandbox::ChildSpec base_spec_;
  unsigned spares_wanted_ = 2;
  bool stopping_ = false;
  std::vector<z::PageRange> run_pages_;  // learn_run_pages
  std::uint64_t rss_bytes_ = 0;  // ours, read after the last top-up (off the runs' path)
  std::optional<std::chrono::steady_clock::time_point> last_exited_;  // when EXITED was last sent
};

int Zygote::start() {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  // kSessionSignal too: the runs' inits are cloned with it blocked, so that the zygote's word
  // that one holds a session (note_session) waits for the init's handler instead of being lost.
  sigset_t blocked = chld;
  sigaddset(&blocked, z::kSessionSignal);
  if (::sigprocmask(SIG_BLOCK, &blocked, nullptr) != 0) {
    log(std::string("sigprocmask: ") + std::strerror(errno));
    return 1;
  }
  signal_fd_.reset(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) {
    log(std::string("signalfd: ") + std::strerror(errno));
    return 1;
  }

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    log(std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  UniqueFd report_rd(report[0]);
  ::setenv("MPES_REPORT_FD", std::to_string(report[1]).c_str(), 1);

  std::string warnings;
  if (py_) {
    if (!boot_interpreter(report_rd.get(), warnings)) return 3;
  } else {
    report_rd.reset();
    ::close(report[1]);
    ::unsetenv("MPES_REPORT_FD");
  }

  if (options_.isolate) {
    try {
      sandbox::Policy policy;
      policy.network = options_.network;
      policy.limits = options_.limits;
      seccomp_ = sandbox::SeccompProgram::compile(policy);
    } catch (const std::exception& e) {
      log(std::string("cannot compile the seccomp filter: ") + e.what());
      return 4;
    }
  }

  base_spec_.isolate = options_.isolate;
  base_spec_.own_network = !options_.network || options_.routed;
  base_spec_.outside_uid = ::getuid();
  base_spec_.outside_gid = ::getgid();
  base_spec_.mounts.tmpfs_bytes = options_.limits.tmpfs_bytes;
  base_spec_.limits = options_.limits;
  base_spec_.rlimit_fallbacks = options_.fallbacks;
  base_spec_.user_quotas = options_.user_quotas;
  base_spec_.seccomp = seccomp_ ? &*seccomp_ : nullptr;
  // Probed here, where the runs are made (in a container: under its seccomp profile). The
  // server reports its own probe; a zygote that cannot scope its runs says so in its warnings.
  const sandbox::RunScoping scoping = sandbox::plan_run_scoping(options_.isolate, sandbox::probe_landlock());
  base_spec_.landlock_scoped = scoping.scoped;
  if (options_.isolate && !scoping.applied()) {
    const std::string line = "run scoping (Landlock) " + scoping.description;
    log(line);
    warnings += (warnings.empty() ? "" : "\n") + line;
  }
  spares_wanted_ = options_.spares;

  z::ReadyMessage ready;
  if (py_) {
    const std::string version = py_->Py_GetVersion();
    ready.python_version = version.substr(0, version.find(' '));
  }
  ready.rss_bytes = rss_bytes_ = own_rss_bytes();
  ready.tasks = static_cast<std::uint32_t>(count_tasks());
  ready.warnings = warnings;
  // The first run's child starts preparing before READY, so the first run finds it (nearly) done.
  if (spares_wanted_ > 0 && !create_spare(options_.direct_spares)) log(spare_error_);
  if (const int err = z::send_message(z::kControlFd, ready); err != 0) {
    log(std::string("cannot send READY: ") + std::strerror(err));
    return 1;
  }
  learn_run_pages();  // after READY: the first run does not wait for it (its spare is ready)

  // Besides control and SIGCHLD: the status pipes of runs in flight, whose init reports the
  // script's end before it exits itself, so EXITED does not wait for the init's (and the run's
  // namespaces') teardown.
  std::vector<pollfd> fds;
  std::vector<pid_t> polled;
  while (!stopping_) {
    fds.assign({{z::kControlFd, POLLIN, 0}, {signal_fd_.get(), POLLIN, 0}});
    polled.clear();
    for (const auto& [pid, child] : children_) {
      if (child.reported || child.status_eof || !child.status) continue;
      fds.push_back({child.status.get(), POLLIN, 0});
      polled.push_back(pid);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      log(std::string("poll: ") + std::strerror(errno));
      return 1;
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (fds[i + 2].revents == 0) continue;
      auto it = children_.find(polled[i]);
      if (it != children_.end()) read_status(it->second);
    }
    // Control first: a TAKEN read before the reap finds its spare still waiting.
    if (fds[0].revents != 0) handle_control();
    if (fds[1].revents != 0) reap();
  }
  // Stopping: every run was killed; reap them all before leaving (unsandboxed: and whatever
  // of theirs was re-parented to us).
  while (!children_.empty() || !spares_.empty() || !abandoned_.empty()) {
    reap();
    if (!children_.empty() || !spares_.empty() || !abandoned_.empty()) ::usleep(1000);
  }
  if (!options_.isolate) kill_children_until_none();
  return 0;
}

// Initialises the embedded interpreter and warms it: boot stub, preloads, the runner, the state
// every run starts from, gc.freeze().
bool Zygote::boot_interpreter(int report_fd, std::string& warnings) {
  py_->Py_InitializeEx(1);
  if (!py_->Py_IsInitialized()) {
    log("the interpreter failed to initialise (PYTHONHOME=" + options_.home + ")");
    return false;
  }
  // The runner's definitions first: the boot stub uses some of them.
  if (py_->run(std::string(python_stubs::runner()) + result_limits_source()) != 0 ||
      py_->run(std::string(python_stubs::files())) != 0 || py_->run(std::string(python_stubs::session())) != 0 ||
      py_->run(std::string(python_stubs::boot())) != 0) {
    log("the boot stub failed (traceback above)");
    return false;
  }
  runner_globals_ = py_->PyModule_GetDict(py_->PyImport_AddModule("__main__"));
  prepare_fn_ = py_->main_function("_mpes_prepare");
  begin_fn_ = py_->main_function("_mpes_begin");
  finish_fn_ = py_->main_function("_mpes_finish");
  failed_fn_ = py_->main_function("_mpes_failed");
  void* ready_fn = py_->main_function("_mpes_zygote_ready");
  session_runner_.py = &*py_;
  session_runner_.globals = runner_globals_;
  session_runner_.start = py_->main_function("_mpes_session_start");
  session_runner_.fork_prepare = py_->main_function("_mpes_fork_prepare");
  session_runner_.forked = py_->main_function("_mpes_forked");
  session_runner_.spare = py_->main_function("_mpes_step_spare");
  session_runner_.begin = py_->main_function("_mpes_step_begin");
  session_runner_.finish = py_->main_function("_mpes_step_finish");
  session_runner_.failed = py_->main_function("_mpes_step_failed");
  if (!session_runner_.complete()) {
    log("the session stub does not define its functions");
    return false;
  }
  if (prepare_fn_ == nullptr || begin_fn_ == nullptr || finish_fn_ == nullptr || failed_fn_ == nullptr ||
      ready_fn == nullptr) {
    log("the runner stub does not define _mpes_zygote_ready/_mpes_prepare/_mpes_begin/_mpes_finish/_mpes_failed");
    return false;
  }
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(report_fd, buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(n));
  std::vector<std::string> dropped;
  for (std::size_t start = 0; start < report.size();) {
    std::size_t end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    const std::string line = report.substr(start, end - start);
    start = end + 1;
    if (line.rfind("drop ", 0) == 0) {
      dropped.push_back(line.substr(5));
    } else if (!line.empty()) {
      warnings += (warnings.empty() ? "" : "\n") + line;
    }
  }
  if (!warnings.empty()) log(warnings);
  // A preload that failed, started a thread or wrote output: this interpreter holds what it
  // left behind, so the zygote starts again without it (scripts then import it themselves).
  if (!dropped.empty()) restart_without(dropped, warnings);
  // Last Python the zygote runs: the state every run starts from, then gc.freeze().
  if (!py_->call(ready_fn)) {
    log("the runner's zygote preparation failed (traceback above)");
    return false;
  }
  return true;
}

void Zygote::restart_without(const std::vector<std::string>& dropped, const std::string& notes) {
  std::vector<std::string> args = options_.argv;
  bool removed = false;
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] != "--preload") continue;
    std::string kept;
    const std::string& list = args[i + 1];
    for (std::size_t start = 0; start <= list.size();) {
      std::size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      const std::string name = list.substr(start, end - start);
      start = end + 1;
      if (name.empty()) continue;
      if (std::find(dropped.begin(), dropped.end(), name) != dropped.end()) {
        removed = true;
        continue;
      }
      kept += (kept.empty() ? "" : ",") + name;
    }
    args[i + 1] = kept;
  }
  if (!removed) {
    log("a preload to drop is not among --preload; the zygote keeps going as it is");
    return;
  }
  std::vector<std::string> env;
  for (const auto& entry : g_start_environment) {
    if (entry.rfind("MPES_BOOT_NOTES=", 0) != 0) env.push_back(entry);
  }
  env.push_back("MPES_BOOT_NOTES=" + notes);
  remove_preload_dir(options_);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::fflush(nullptr);
  ::fcntl(z::kControlFd, F_SETFD, 0);  // the control socket is the one fd that stays
  ::execve("/proc/self/exe", argv.data(), envp.data());
  log(std::string("cannot start the zygote again without the dropped preloads: ") + std::strerror(errno));
  ::fcntl(z::kControlFd, F_SETFD, FD_CLOEXEC);
}

void Zygote::handle_control() {
  for (;;) {
    z::Received got = z::receive_message(z::kControlFd);
    switch (got.status) {
      case z::Received::Status::would_block:
        return;
      case z::Received::Status::eof:
        // The server is gone or shutting down: no run outlives it.
        stopping_ = true;
        kill_all_children();
        return;
      case z::Received::Status::error:
        log("bad control message: " + got.error);
        return;
      case z::Received::Status::message:
        if (const auto* run = std::get_if<z::RunMessage>(&got.message)) {
          handle_run(*run, std::move(got.fds));
        } else if (const auto* linked = std::get_if<z::SpareLinkedMessage>(&got.message)) {
          handle_spare_linked(*linked);
        } else if (const auto* taken = std::get_if<z::TakenMessage>(&got.message)) {
          handle_taken(*taken);
        } else {
          log("unexpected control message ignored");
        }
        break;
    }
  }
}

void Zygote::refuse(std::uint64_t run_id, const std::string& reason) {
  log("run " + std::to_string(run_id) + " refused: " + reason);
  z::send_message(z::kControlFd, z::RefusedMessage{run_id, reason});
}

bool Zygote::create_spare(bool direct) {
  if (const int tasks = count_tasks(); tasks != 1) {
    spare_error_ = "the zygote has " + std::to_string(tasks) +
                   " threads (a preloaded module started threads); forking it could deadlock "
                   "the run. Remove that module from --preload.";
    return false;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    spare_error_ = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  UniqueFd handoff(sv[0]), handoff_child(sv[1]);
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    spare_error_ = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  UniqueFd status_rd(status_pipe[0]), status_wr(status_pipe[1]);
  ::fcntl(status_rd.get(), F_SETFL, O_NONBLOCK);

  std::string work_dir;
  if (!options_.isolate) {
    std::string tmpl = options_.work_root + "/mpes-run-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      spare_error_ = "cannot create a work dir in " + options_.work_root + ": " + std::strerror(errno);
      return false;
    }
    work_dir = tmpl;
  }
  sandbox::ChildSpec spec = base_spec_;
  if (!work_dir.empty()) spec.mounts.work_dir = work_dir;
  // Until a run is handed over: 0 /dev/null, 1 and 2 the zygote's log, 3 the hand-off socket,
  // 4 the status pipe.
  const int wanted[] = {-1, 2, 2, handoff_child.get(), status_wr.get()};

  std::fflush(nullptr);  // nothing buffered may be written twice (the boot stub flushed Python's)
  if (py_) py_->PyOS_BeforeFork();
  int pidfd = -1;
  const pid_t zygote = ::getpid();
  const pid_t pid = options_.isolate
                        ? sandbox::clone_into(sandbox::run_namespace_flags(base_spec_.own_network), &pidfd)
                        : ::fork();
  if (pid == 0) {
    try {
      sandbox::arrange_fds(wanted);
    } catch (const std::exception& e) {
      // Before fd 4 is the status pipe: told through the pipe's own fd (reap_spare reads it).
      StatusRecord record;
      record.kind = StatusRecord::setup_failed;
      std::snprintf(record.text, sizeof record.text, "%s", e.what());
      [[maybe_unused]] const ssize_t n = ::write(status_wr.get(), &record, sizeof record);
      log(std::string("run setup: ") + e.what());
      ::_exit(kSetupFailedExit);
    }
    if (options_.isolate) run_init(spec);
    run_plain_init(spec, work_dir, zygote);
  }
  const int fork_errno = errno;
  if (py_) py_->PyOS_AfterFork_Parent();
  if (pid < 0) {
    if (!work_dir.empty()) ::rmdir(work_dir.c_str());
    spare_error_ = std::string("cannot fork the run: ") + std::strerror(fork_errno) +
                   (options_.isolate ? " (creating its namespaces failed; are user namespaces "
                                       "available?)"
                                     : "");
    return false;
  }
  Spare spare;
  spare.pid = pid;
  spare.pidfd.reset(pidfd >= 0 ? pidfd : static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  spare.handoff = std::move(handoff);
  spare.status = std::move(status_rd);
  spare.work_dir = work_dir;
  if (direct) {
    // The server's from now on: it links it (routed), hands it a run and says TAKEN. Our end of
    // the hand-off socket goes with the message, so only the server can give it a run.
    spare.direct = true;
    const int attached[] = {spare.pidfd.get(), spare.handoff.get()};
    if (const int err = z::send_message(z::kControlFd, z::SpareMessage{pid, 1}, attached); err != 0 && err != EPIPE) {
      log(std::string("cannot send SPARE: ") + std::strerror(err));
    }
    spare.handoff.reset();
  } else if (options_.routed) {
    // The server links its network; until it says so, the spare takes no run.
    spare.linked = false;
    const int attached[] = {spare.pidfd.get()};
    if (const int err = z::send_message(z::kControlFd, z::SpareMessage{pid}, attached); err != 0 && err != EPIPE) {
      log(std::string("cannot send SPARE: ") + std::strerror(err));
    }
  }
  spares_.push_back(std::move(spare));
  return true;
}

void Zygote::top_up_spares() {
  while (spares_.size() < spares_wanted_) {
    if (!create_spare(options_.direct_spares)) return;  // the next run tries again and reports why
  }
}

void Zygote::replace_taken_spare() {
  std::optional<std::chrono::steady_clock::duration> since;
  if (last_exited_) since = std::chrono::steady_clock::now() - *last_exited_;
  switch (z::replace_taken_spare(spares_.size(), since)) {
    case z::SpareReplacement::all_now:
      top_up_spares();
      break;
    case z::SpareReplacement::one_now:
      if (spares_wanted_ > 0) create_spare(options_.direct_spares);
      break;
    case z::SpareReplacement::after_exit:
      break;
  }
}

void Zygote::handle_run(const z::RunMessage& run, std::vector<UniqueFd> fds) {
  if (fds.size() < z::RunMessage::fixed_fds(run.flags)) {
    refuse(run.run_id, "RUN without the fds its flags call for");
    return;
  }
  if ((run.flags & z::kRunFlagSession) != 0 && !session_runner_.complete()) {
    refuse(run.run_id, "sessions need an interpreter with a shared libpython (this one is run by the spawn path)");
    return;
  }
  // Runs keep their order: one arriving while others wait for a linked spare waits behind them.
  if (pending_.empty() && dispatch(run, fds)) return;
  if (!options_.routed) {
    refuse(run.run_id, spare_error_.empty() ? "the run's child died before it could start (see the zygote's log)"
                                            : spare_error_);
    return;
  }
  pending_.push_back({run, std::move(fds)});
  // A spare for it, unless one is already on its way.
  const bool coming = std::any_of(spares_.begin(), spares_.end(), [](const Spare& s) { return !s.linked; });
  if (!coming && !create_spare(false)) refuse_pending(spare_error_);
}

bool Zygote::dispatch(const z::RunMessage& run, std::vector<UniqueFd>& fds) {
  std::vector<int> raw;
  for (const auto& fd : fds) raw.push_back(fd.get());
  // A spare prepared ahead takes the run; if it died meanwhile, a fresh one does.
  // Direct spares are the server's: a run sent here had none, and gets one of ours.
  const auto ours_ready = [](const Spare& s) { return !s.direct && s.linked; };
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (std::none_of(spares_.begin(), spares_.end(), [](const Spare& s) { return !s.direct; }) &&
        !create_spare(false)) {
      return false;
    }
    const auto ready = std::find_if(spares_.begin(), spares_.end(), ours_ready);
    if (ready == spares_.end()) return false;  // ours is being linked (routed)
    Spare spare = std::move(*ready);
    spares_.erase(ready);
    // A session's init outlives step 0's process (session_signal.h): told before the RUN can
    // reach the process. (Unsandboxed, the init is the plain one, which is not told.)
    if ((run.flags & z::kRunFlagSession) != 0 && options_.isolate) ::kill(spare.pid, z::kSessionSignal);
    if (z::send_message(spare.handoff.get(), run, raw) != 0) {
      abandoned_.emplace(spare.pid, std::move(spare));  // reaped (and logged) when it exits
      continue;
    }
    children_.emplace(spare.pid, child_of(spare, run.run_id));
    z::StartedMessage started{run.run_id, spare.pid};
    int sent;
    if (spare.pidfd) {
      const int attached[] = {spare.pidfd.get()};
      sent = z::send_message(z::kControlFd, started, attached);
    } else {
      sent = z::send_message(z::kControlFd, started);
    }
    if (sent != 0) log(std::string("cannot send STARTED: ") + std::strerror(sent));
    replace_taken_spare();
    return true;
  }
  spare_error_ = "the run's child died before it could start (see the zygote's log)";
  return false;
}

void Zygote::handle_spare_linked(const z::SpareLinkedMessage& linked) {
  const auto it = std::find_if(spares_.begin(), spares_.end(), [&](const Spare& s) { return s.pid == linked.pid; });
  if (it == spares_.end()) return;  // died meanwhile (reap_spare dealt with it)
  if (linked.ok != 0) {
    it->linked = true;
    dispatch_pending();
    return;
  }
  spare_error_ = (options_.routed ? "the run's network could not be set up: " : "the run's spare was dropped: ") +
                 linked.reason;
  log(spare_error_);
  Spare spare = std::move(*it);
  spares_.erase(it);
  spare.handoff.reset();  // its script process sees EOF and leaves
  ::kill(spare.pid, SIGKILL);
  abandoned_.emplace(spare.pid, std::move(spare));
  if (!pending_.empty()) refuse_pending(spare_error_);
}

void Zygote::handle_taken(const z::TakenMessage& taken) {
  const auto waiting = std::find_if(spares_.begin(), spares_.end(),
                                    [&](const Spare& s) { return s.direct && s.pid == taken.pid; });
  if (waiting != spares_.end()) {
    auto& placed = children_.emplace(taken.pid, child_of(*waiting, taken.run_id)).first->second;
    spares_.erase(waiting);
    read_status(placed);  // its end may be recorded already
    replace_taken_spare();  // as after a run the zygote dispatched
    return;
  }
  const auto early = std::find_if(early_exits_.begin(), early_exits_.end(),
                                  [&](const auto& e) { return e.first == taken.pid; });
  if (early != early_exits_.end()) {
    EarlyExit exit = std::move(early->second);
    early_exits_.erase(early);
    exit.child.run_id = taken.run_id;
    exit.child.taken = true;
    child_reaped(exit.child, exit.status, exit.usage);
    return;
  }
  // Not a spare of ours: the server's bookkeeping is wrong; its run must not wait forever.
  refuse(taken.run_id, "the zygote has no spare " + std::to_string(taken.pid) + " for this run");
}

void Zygote::dispatch_pending() {
  while (!pending_.empty()) {
    Pending& next = pending_.front();
    if (!dispatch(next.run, next.fds)) return;
    pending_.pop_front();
  }
}

void Zygote::refuse_pending(const std::string& reason) {
  if (pending_.empty()) return;
  refuse(pending_.front().run.run_id, reason);
  pending_.pop_front();
  if (pending_.empty()) return;
  const bool coming = std::any_of(spares_.begin(), spares_.end(), [](const Spare& s) { return !s.linked; });
  if (!coming && !create_spare(false)) refuse_pending(spare_error_);
}

void Zygote::run_init(const sandbox::ChildSpec& spec) {
  // Dies with the zygote; then the kernel kills every process of the run's pid namespace.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    sandbox::prepare_run_namespace(spec);
  } catch (const std::exception& e) {
    setup_failed(e.what());
  }
  // The zygote may tell this init it holds a session (note_session) from the moment it is
  // cloned: the signal stays blocked (as in the zygote) until the handler is there, then comes.
  // The script process does not keep the handler (and sets its own mask).
  struct sigaction session_signal {};
  session_signal.sa_sigaction = note_session;
  session_signal.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigaction(z::kSessionSignal, &session_signal, nullptr);
  const pid_t script = ::fork();
  if (script < 0) setup_failed("fork of the script process failed");
  if (script == 0) {
    ::signal(z::kSessionSignal, SIG_DFL);
    run_script(spec);
  }
  sigset_t session_word;
  sigemptyset(&session_word);
  sigaddset(&session_word, z::kSessionSignal);
  ::sigprocmask(SIG_UNBLOCK, &session_word, nullptr);

  // init: holds nothing of the run's, cannot be inspected, reaps everything, reports the script.
  for (int fd = 0; fd < kStatusFd; ++fd) ::close(fd);
  ::prctl(PR_SET_DUMPABLE, 0);
  StatusRecord record;
  if (!reap_until_script_ends(script, record)) ::_exit(kSetupFailedExit);
  write_record(record);  // the zygote answers from this, not from our exit
  // The zygote, just woken by that record, is often placed on this CPU: let it answer before
  // our exit tears the run down (the whole address space, then the namespaces).
  ::sched_yield();
  ::_exit(0);  // the kernel now kills whatever the script left running
}

// Unsandboxed runs: the same init as a native run's, without namespaces. It is the subreaper
// of everything the run starts (a daemon that leaves the run's session is still its
// descendant), reports the script's end, then kills whatever the run left running. If the
// zygote dies, SIGTERM makes it do the same.
void Zygote::run_plain_init(const sandbox::ChildSpec& spec, const std::string& work_dir, pid_t zygote) {
  struct sigaction on_term {};
  on_term.sa_handler = note_terminate;  // no SA_RESTART: wait4 returns EINTR
  sigemptyset(&on_term.sa_mask);
  ::sigaction(SIGTERM, &on_term, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // Once the zygote is gone, nobody but this init removes the run's work dir. Gone before
  // PR_SET_PDEATHSIG took: this init was re-parented (to pid 1 or to a subreaper).
  if (::getppid() != zygote) {
    remove_tree(work_dir);
    ::_exit(kSetupFailedExit);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (::chdir(work_dir.c_str()) != 0) setup_failed("chdir to the work dir failed");
  const pid_t init = ::getpid();
  const pid_t script = ::fork();
  if (script < 0) setup_failed("fork of the script process failed");
  if (script == 0) {
    ::signal(SIGTERM, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with its init
    if (::getppid() != init) ::_exit(kSetupFailedExit);  // its init died before that took
    ::setsid();
    run_script(spec);
  }
  g_script = script;
  if (g_terminate) ::kill(script, SIGKILL);  // SIGTERM came before its pid was known

  for (int fd = 0; fd < kStatusFd; ++fd) ::close(fd);
  StatusRecord record;
  if (!reap_until_script_ends(script, record)) {
    if (g_terminate) {
      ::kill(script, SIGKILL);
      kill_children_until_none();
      remove_tree(work_dir);
    }
    ::_exit(kSetupFailedExit);
  }
  write_record(record);  // the zygote answers from this
  kill_children_until_none();
  if (g_terminate) remove_tree(work_dir);
  ::_exit(0);
}

// Unsandboxed: processes re-parented to the zygote (their run's init was killed) are killed.
void Zygote::kill_strays() {
  for (const pid_t pid : children_of(::getpid())) {
    if (children_.count(pid) != 0 || abandoned_.count(pid) != 0) continue;
    if (std::any_of(spares_.begin(), spares_.end(), [pid](const Spare& s) { return s.pid == pid; })) continue;
    ::kill(pid, SIGKILL);
  }
}

void Zygote::set_run_environment() {
  // The run's environment (the runner mirrors it into os.environ): subprocesses inherit it.
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) setup_failed("getcwd failed");
  ::clearenv();
  ::setenv("PATH", options_.run_path.empty() ? "/usr/local/bin:/usr/bin:/bin" : options_.run_path.c_str(), 1);
  ::setenv("HOME", cwd, 1);
  ::setenv("TMPDIR", cwd, 1);
  ::setenv("LANG", "C.UTF-8", 1);
  ::setenv("PYTHONIOENCODING", "utf-8", 1);
  ::setenv("MPLBACKEND", "Agg", 1);
}

void Zygote::learn_run_pages() {
  // Nothing here is needed for a run to work: on any failure the spares copy nothing ahead.
  if (!py_) return;
  int ready[2], hold[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return;
  UniqueFd ready_rd(ready[0]), ready_wr(ready[1]);
  if (::pipe2(hold, O_CLOEXEC) != 0) return;
  UniqueFd hold_rd(hold[0]), hold_wr(hold[1]);
  UniqueFd script;
  try {
    script = sandbox::sealed_memfd("mpes-rehearsal", kRehearsalScript);
  } catch (const std::exception&) {
    return;
  }
  // A directory of its own for the rehearsal's script.py: sandboxed, under the zygote's tmpfs
  // (hidden beneath each run's); unsandboxed, where the runs' work dirs are. Removed below.
  std::string dir = options_.isolate ? std::string(sandbox::kRunWorkDir) + "/.mpes-rehearsal-XXXXXX"
                                     : options_.work_root + "/mpes-rehearsal-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return;
  std::fflush(nullptr);
  py_->PyOS_BeforeFork();
  const pid_t pid = ::fork();
  if (pid == 0) {
    py_->PyOS_AfterFork_Child();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // As a run: 0-2 and 5 /dev/null, 3 the script; 6 says "done", 7 holds the process until the
    // zygote has read its pages. Its exit waits there (the runner ends with os._exit). First, so
    // that nothing below can write to an fd of the zygote's (setup_failed writes to 4).
    const int wanted[] = {-1, -1, -1, script.get(), -1, -1, ready_wr.get(), hold_rd.get()};
    try {
      sandbox::arrange_fds(wanted);
    } catch (...) {
      ::_exit(1);
    }
    if (::chdir(dir.c_str()) != 0) ::_exit(1);
    set_run_environment();
    py_->run("import os as _mpes_os\n"
             "def _mpes_rehearsal_exit(code, _exit=_mpes_os._exit, _os=_mpes_os):\n"
             "    _os.write(6, b'.')\n"
             "    _os.read(7, 1)\n"
             "    _exit(code)\n"
             "_mpes_os._exit = _mpes_rehearsal_exit\n"
             "del _mpes_os, _mpes_rehearsal_exit\n");
    if (!py_->call(prepare_fn_)) ::_exit(1);
    py_->set_int(runner_globals_, "_MPES_FILES_FD", -1);
    py_->run_steps(begin_fn_, finish_fn_, failed_fn_, runner_globals_);
    ::_exit(1);
  }
  py_->PyOS_AfterFork_Parent();
  ready_wr.reset();
  hold_rd.reset();
  if (pid > 0) {
    pollfd done{ready_rd.get(), POLLIN, 0};
    char byte;
    if (::poll(&done, 1, kRehearsalWaitMs) == 1 && ::read(ready_rd.get(), &byte, 1) == 1) {
      run_pages_ = pages_written_by(pid, kRunPagesBytes);
    }
    ::kill(pid, SIGKILL);  // done (or stuck): it has nothing left to do
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  remove_tree(dir);
}

void Zygote::run_script(sandbox::ChildSpec spec) {
  if (py_) py_->PyOS_AfterFork_Child();  // first: reinitialises the interpreter's locks, reseeds random
  try {
    sandbox::prepare_run_process(spec);
  } catch (const std::exception& e) {
    setup_failed(e.what());
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  set_run_environment();
  // Everything that does not depend on the script happens before it arrives: the runner's
  // preparation, then the copies of the pages a run writes (learned by learn_run_pages).
  if (py_ && !py_->call(prepare_fn_)) setup_failed("the runner's preparation failed (traceback in the log)");
  take_copies(run_pages_, kRunPagesSliceBytes, [] {
    pollfd handoff{kHandoffFd, POLLIN, 0};
    return ::poll(&handoff, 1, 0) != 0;  // the run has arrived (or the zygote is stopping)
  });
  // The spawn path's command line, ready before the run arrives (but for its last lines).
  std::string bootstrap;
  if (!py_) {
    bootstrap = std::string(python_stubs::runner()) + result_limits_source() + "\n" +
                std::string(python_stubs::files()) + "\n" + std::string(python_stubs::spawn());
  }

  z::Received got = z::receive_message_blocking(kHandoffFd);
  const auto* run = std::get_if<z::RunMessage>(&got.message);
  if (got.status != z::Received::Status::message || run == nullptr ||
      got.fds.size() < z::RunMessage::fixed_fds(run->flags)) {
    ::_exit(0);  // no run for this spare (the zygote is stopping)
  }
  const bool session = (run->flags & z::kRunFlagSession) != 0;
  const bool files = !session && (run->flags & z::kRunFlagFiles) != 0;
  // A run: 0 /dev/null, 1 stdout, 2 stderr, 3 script, 4 status pipe, 5 result channel, [6 files
  // request], then the cgroup.procs fds. The result fd stays inheritable until the runner marks
  // it (so the spawn path's exec keeps it). A session: 0-2 /dev/null, 3 its control socket (moved
  // to kHolderControlFd once the status pipe is no longer needed), 4 status pipe, then cgroups.
  static_assert(z::kRunResultFd == 5);
  std::vector<int> wanted;
  if (session) {
    wanted = {-1, -1, -1, got.fds[z::RunMessage::kSessionSocketFd].get(), kStatusFd};
    // A session's steps each get a CPU budget of their own (session_holder.cpp).
    spec.timeout_seconds = 0;
    spec.limits.cpu_seconds = 0;
  } else {
    wanted = {0, got.fds[z::RunMessage::kStdoutFd].get(), got.fds[z::RunMessage::kStderrFd].get(),
              got.fds[z::RunMessage::kScriptFd].get(), kStatusFd, got.fds[z::RunMessage::kResultFd].get()};
    if (files) wanted.push_back(got.fds[z::RunMessage::kFilesFd].get());
    spec.timeout_seconds = run->timeout_seconds;
  }
  spec.cgroup_join_fds.clear();
  for (std::size_t i = z::RunMessage::fixed_fds(run->flags); i < got.fds.size(); ++i) {
    spec.cgroup_join_fds.push_back(static_cast<int>(wanted.size()));
    wanted.push_back(got.fds[i].get());
  }
  try {
    sandbox::arrange_fds(wanted);
    for (auto& fd : got.fds) (void)fd.release();  // closed by arrange_fds
    sandbox::lock_down(spec);
  } catch (const std::exception& e) {
    setup_failed(e.what());
  }
  for (int fd : spec.cgroup_join_fds) ::close(fd);
  if (session) {
    // The init still reports this process's end (the sandbox's end) to the zygote.
    ::dup2(3, z::kHolderControlFd);
    ::close(3);
    z::serve_session(session_runner_);
  }
  constexpr int kRunFilesFd = 6;
  if (!py_) {
    bootstrap += "\n_MPES_FILES_FD = " + std::to_string(files ? kRunFilesFd : -1) +
                 "\n_mpes_zygote_ready()\n_mpes_prepare()\n_mpes_run()\n";
    // Spawn path: a fresh interpreter (isolated mode: no user site, no PYTHON* variables) runs
    // the same runner; the status pipe stays open (close-on-exec) to report a failed exec.
    ::fcntl(kStatusFd, F_SETFD, FD_CLOEXEC);
    const char* argv[] = {options_.spawn_executable.c_str(), "-I", "-c", bootstrap.c_str(), nullptr};
    ::execve(argv[0], const_cast<char* const*>(argv), environ);
    setup_failed("cannot execute the interpreter (spawn path)");
  }
  ::close(kStatusFd);
  py_->set_int(runner_globals_, "_MPES_FILES_FD", files ? kRunFilesFd : -1);
  py_->run_steps(begin_fn_, finish_fn_, failed_fn_, runner_globals_);
  ::_exit(1);  // not reached: the runner exits the process itself
}

void Zygote::reap() {
  signalfd_siginfo info;
  while (::read(signal_fd_.get(), &info, sizeof info) > 0) {
  }
  bool strays = false;  // unsandboxed: processes of a run that is over may be our children
  for (;;) {
    int status = 0;
    rusage usage{};
    const pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
    if (pid <= 0) break;
    auto it = children_.find(pid);
    if (it == children_.end()) {
      const auto direct = std::find_if(spares_.begin(), spares_.end(),
                                       [pid](const Spare& s) { return s.direct && s.pid == pid; });
      if (direct != spares_.end()) {
        // The server may have handed it a run whose TAKEN is still on its way: kept until then.
        EarlyExit exit{child_of(*direct, 0, false), status, usage};
        spares_.erase(direct);
        read_status(exit.child);
        if (exit.child.exited && (exit.child.exited->flags & z::kExitSetupFailed)) {
          log("a prepared run child failed: " + exit.child.exited->detail);
        }
        early_exits_.emplace_back(pid, std::move(exit));
        if (early_exits_.size() > kMaxEarlyExits) early_exits_.pop_front();
        continue;
      }
      if (!reap_spare(pid, status)) strays = true;  // one of them: its children are ours now
      continue;
    }
    if (child_reaped(it->second, status, usage)) strays = true;
    children_.erase(it);
  }
  if (strays && !options_.isolate) kill_strays();
}

bool Zygote::child_reaped(Child& child, int status, const rusage& usage) {
  read_status(child);
  // Unsandboxed, an init that did not end by itself (killed at a deadline) left the run's
  // processes to us, their subreaper.
  const bool strays = !options_.isolate && !WIFEXITED(status);
  if (!options_.isolate) remove_tree(child.work_dir);
  if (!child.reported) {
    // No record of the script's end (killed, setup failed, unsandboxed): the process's own.
    z::ExitedMessage exited = child.exited.value_or(z::ExitedMessage{});
    exited.run_id = child.run_id;
    if (!child.exited || !(exited.flags & kScriptEnded)) exited.wait_status = status;
    exited.flags &= ~kScriptEnded;
    exited.user_cpu_us = usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec;
    exited.system_cpu_us = usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
    exited.max_rss_kb = usage.ru_maxrss;
    send_exited(child, std::move(exited));
  }
  return strays;
}

// Reads what a run's status pipe holds; on the init's record of the script's end, answers
// right away (the init and the run's namespaces are torn down after, and reaped later).
void Zygote::read_status(Child& child) {
  StatusRecord record;
  while (!child.status_eof && child.status) {
    const ssize_t n = ::read(child.status.get(), &record, sizeof record);
    if (n != static_cast<ssize_t>(sizeof record)) {
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) child.status_eof = true;
      break;
    }
    record.text[sizeof record.text - 1] = '\0';
    if (!child.exited) child.exited.emplace();
    if (record.kind == StatusRecord::script_exited) {
      child.exited->wait_status = record.wait_status;
      child.exited->user_cpu_us = record.user_cpu_us;
      child.exited->system_cpu_us = record.system_cpu_us;
      child.exited->max_rss_kb = record.max_rss_kb;
      child.exited->flags |= kScriptEnded;
    } else if (record.kind == StatusRecord::setup_failed) {
      child.exited->flags |= z::kExitSetupFailed;
      child.exited->detail = record.text;
    }
  }
  if (child.taken && !child.reported && child.exited && (child.exited->flags & kScriptEnded)) {
    z::ExitedMessage exited = *child.exited;
    exited.run_id = child.run_id;
    exited.flags &= ~kScriptEnded;
    send_exited(child, std::move(exited));
  }
}

void Zygote::send_exited(Child& child, z::ExitedMessage exited) {
  child.reported = true;
  if (stopping_) return;
  exited.zygote_rss_bytes = rss_bytes_;
  if (const int err = z::send_message(z::kControlFd, exited); err != 0) {
    log(std::string("cannot send EXITED: ") + std::strerror(err));
  }
  // The server, just woken by EXITED, is often placed on this CPU: let it answer before the
  // fork of a new spare takes the CPU for most of a millisecond.
  ::sched_yield();
  top_up_spares();
  last_exited_ = std::chrono::steady_clock::now();
  rss_bytes_ = own_rss_bytes();
}

// A spare that died before taking a run: say why in the log (the next run forks a new one).
bool Zygote::reap_spare(pid_t pid, int status) {
  Spare spare;
  const auto waiting = std::find_if(spares_.begin(), spares_.end(), [pid](const Spare& s) { return s.pid == pid; });
  const bool was_waiting = waiting != spares_.end();
  if (was_waiting) {
    spare = std::move(*waiting);
    spares_.erase(waiting);
  } else if (auto it = abandoned_.find(pid); it != abandoned_.end()) {
    spare = std::move(it->second);
    abandoned_.erase(it);
  } else {
    return false;
  }
  std::string why = WIFEXITED(status)     ? "exited with status " + std::to_string(WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                          : "ended";
  StatusRecord record;
  while (::read(spare.status.get(), &record, sizeof record) == static_cast<ssize_t>(sizeof record)) {
    record.text[sizeof record.text - 1] = '\0';
    if (record.kind == StatusRecord::setup_failed) why = record.text;
  }
  if (!options_.isolate) remove_tree(spare.work_dir);
  if (stopping_) return true;
  log("a prepared run child died before its run: " + why);
  // An abandoned spare's end says nothing new (it failed to take its run, or its network failed).
  if (!was_waiting) return true;
  spare_error_ = "the run's sandbox could not be set up: " + why;
  // Runs waiting for a linked spare (--network routed): unless another is on its way, the oldest
  // is refused with this reason and a new spare is made for the rest.
  const bool coming = std::any_of(spares_.begin(), spares_.end(), [](const Spare& s) { return !s.linked; });
  if (!pending_.empty() && !coming) refuse_pending(spare_error_);
  return true;
}

void Zygote::kill_all_children() {
  pending_.clear();  // the server answers them (it is gone or stopping)
  // A sandboxed run ends with its init (the pid namespace goes with it). An unsandboxed run's
  // init must live to kill what the run started (run_plain_init): SIGTERM asks it to.
  const int end_run = options_.isolate ? SIGKILL : SIGTERM;
  for (const auto& [pid, child] : children_) ::kill(pid, end_run);
  for (auto& spare : spares_) {
    spare.handoff.reset();  // its script process sees EOF and leaves
    ::kill(spare.pid, SIGKILL);
  }
  for (auto& [pid, spare] : abandoned_) ::kill(pid, SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  for (char** e = environ; *e != nullptr; ++e) g_start_environment.emplace_back(*e);
  // Before anything can load a BLAS: one thread each, so the zygote stays forkable.
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                          "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"}) {
    ::setenv(var, "1", 1);
  }
  Options options = parse_options(argc, argv);

  // In a container (docker backend) no fd can be handed over at the start: the server listens
  // on a socket in a directory mounted for this zygote alone, and the zygote connects to it.
  if (!options.connect.empty()) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (options.connect.size() >= sizeof address.sun_path) usage("--connect: path too long");
    std::memcpy(address.sun_path, options.connect.data(), options.connect.size());
    UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!sock || ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::dup2(sock.get(), z::kControlFd) < 0) {
      log("cannot connect to the control socket " + options.connect + ": " + std::strerror(errno));
      return 2;
    }
    if (sock.get() == z::kControlFd) (void)sock.release();  // it is fd 3 already
  }
  // Only the control socket and stdio survive from whoever started us.
  if (::fcntl(z::kControlFd, F_GETFD) < 0) {
    log("no control socket on fd 3 (the zygote is started by mcp-python-exec-sandbox)");
    return 2;
  }
  ::fcntl(z::kControlFd, F_SETFD, FD_CLOEXEC);
  ::syscall(SYS_close_range, z::kControlFd + 1, ~0U, 0U);
  if (!options.isolate) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // bwrap does it otherwise
    // What an unsandboxed run leaves behind when its init is killed comes to us, to be killed.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }

  ::setenv("PYTHONHOME", options.home.c_str(), 1);
  ::setenv("PYTHONIOENCODING", "utf-8", 1);
  ::setenv("MPES_EXECUTABLE", options.executable.c_str(), 1);
  ::setenv("MPES_PRELOAD", options.preload.c_str(), 1);
  ::setenv("MPES_RUN_PATH", options.run_path.c_str(), 1);
  ::setenv("MPES_SYS_PATH", options.sys_path.c_str(), 1);
  ::setenv("MPES_PREFIX", options.prefix.c_str(), 1);
  // Sandboxed runs all work in the same place (their own tmpfs on it); unsandboxed ones each
  // get a temporary directory.
  ::setenv("MPES_WORK_DIR", options.isolate ? sandbox::kRunWorkDir : "", 1);
  // Preloads are imported with a writable home as their cwd, as a script's imports would be:
  // sandboxed, the work dir (the zygote's own tmpfs there, hidden under each run's); else a
  // temporary directory of the zygote's.
  if (options.isolate) {
    options.preload_dir = sandbox::kRunWorkDir;
  } else if (!options.preload.empty()) {
    std::string tmpl = options.work_root + "/mpes-zygote-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) {
      options.preload_dir = tmpl;
    } else {
      log("cannot create a home for preloads in " + options.work_root + ": " + std::strerror(errno));
    }
  }
  ::setenv("MPES_PRELOAD_DIR", options.preload_dir.c_str(), 1);
  int status = 3;
  try {
    std::optional<engine::LibPython> python;
    if (options.spawn_executable.empty()) python = engine::LibPython::load(options.libpython);
    Zygote zygote(options, python);
    status = zygote.start();
  } catch (const std::exception& e) {
    log(e.what());
  }
  remove_preload_dir(options);
  return status;
}
