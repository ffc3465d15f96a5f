// Package installers (uv or pip) for dependency environments: their command lines, a sandboxed
// run under bubblewrap, and the few decisive lines of a failure. Blocking: call from a worker
// thread, never from the server's event loop.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/environments/index_options.h"
#include "engine/interpreters/discovery.h"

namespace engine::deps {

// An owned file descriptor; closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Lets another thread kill the process a blocking run_process() is waiting for.
class KillSwitch {
 public:
  void kill();                 // SIGKILL to the running process (now or as soon as it starts)
  bool killed() const { return killed_.load(); }
  void reset() { killed_ = false; }
  // Used by run_process.
  void attach(pid_t pid);
  void detach();

 private:
  std::mutex mutex_;
  pid_t pid_ = -1;
  std::atomic<bool> killed_{false};
};

// A path made reachable for an unprivileged child of a root server: in a private mount
// namespace of the child, `fd` (an O_PATH fd the server opened) is bind-mounted at `stage` on a
// fresh tmpfs at ProcessSpec::stage_root, before the uid drops. (bwrap 0.8's --bind-fd still
// realpath()s the fd's target, which fails under a 0700 parent such as /root.)
struct StagedPath {
  int fd = -1;
  std::string stage;  // "<stage_root>/<n>"
  bool directory = true;
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path or found on PATH of the server
  std::vector<std::string> env;   // the child's whole environment ("K=V")
  std::vector<int> pass_fds;      // fds inherited by the child (all others are close-on-exec)
  std::optional<uid_t> run_as_uid;  // setresuid/setresgid/setgroups({}) before exec
  std::optional<gid_t> run_as_gid;
  std::vector<StagedPath> staged;  // needs root (CAP_SYS_ADMIN); see StagedPath
  std::string stage_root = "/tmp";
  std::string stdin_data;         // written to the child's stdin, then closed
  int timeout_ms = 0;             // 0 = none
  std::string cwd;                // "" = inherit
};

struct ProcessResult {
  int exit_code = -1;      // when exited
  int term_signal = 0;     // when killed by a signal
  bool timed_out = false;
  bool killed = false;     // by a KillSwitch
  std::string out;
  std::string err;
  bool ok() const { return term_signal == 0 && exit_code == 0 && !timed_out && !killed; }
};

// Spawns argv without a shell, feeds stdin, captures stdout/stderr (each bounded to
// `max_capture` bytes, the tail kept), calls on_line for every complete stdout/stderr line,
// enforces the timeout, and reaps the child. Throws std::runtime_error when it cannot spawn.
ProcessResult run_process(const ProcessSpec& spec,
                          const std::function<void(std::string_view line)>& on_line = {},
                          KillSwitch* kill_switch = nullptr, std::size_t max_capture = 1 << 20);

enum class InstallerKind { uv, pip };

// The full installer command line (before sandboxing). `requirements` are PEP 508 strings.
std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements);

// The lines of an installer's output that say why it failed (pip's "ERROR: ...", the conflict
// explanation, uv's "error:" / "×" / "╰─▶" lines), bounded; the last lines when none match.
std::string decisive_lines(std::string_view output);

// Failure that is the host's or the server's, not the requirements' (no installer, no bwrap).
struct InstallerUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct InstallerOptions {
  std::string uv_path = "uv";     // --uv-path; found on PATH unless it contains '/'
  IndexOptions index;
  bool sandboxed = true;          // false only for --sandbox-backend none
  std::string bwrap_path = "bwrap";
  int timeout_seconds = 900;
  // When the server is root the installer runs as this uid/gid (nobody).
  uid_t unprivileged_uid = 65534;
  gid_t unprivileged_gid = 65534;
};

struct InstallRequest {
  const Interpreter* interpreter = nullptr;
  std::vector<std::string> requirements;  // PEP 508 strings
  std::string target;       // existing empty directory, writable by `owner_uid`
  std::string cache_dir;    // the installer's own cache (existing, writable by `owner_uid`)
  bool interpreter_has_pip = true;
};

struct InstallOutcome {
  bool ok = false;
  std::string installer;   // "uv 0.x" / "pip" - which ran
  std::string error;       // decisive lines when !ok
  ProcessResult process;
};

// Which uid the installer will run as (so callers can chown the target and cache to it).
struct InstallerIdentity {
  uid_t uid;
  gid_t gid;
  bool dropped;  // true when the server is root and the installer runs unprivileged
};
InstallerIdentity installer_identity(const InstallerOptions& options);

// Runs the installer once. `on_line` sees its output lines as they come. Throws
// InstallerUnavailable when neither uv nor pip can be used, or bubblewrap is missing.
InstallOutcome run_installer(const InstallerOptions& options, const InstallRequest& request,
                             const std::function<void(std::string_view line)>& on_line,
                             KillSwitch* kill_switch);

}  // namespace engine::deps
