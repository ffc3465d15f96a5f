#include "engine/environments/installer.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "sandbox/path_search.h"

namespace engine::deps {

namespace fs = std::filesystem;

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

void KillSwitch::kill() {
  std::lock_guard lock(mutex_);
  killed_ = true;
  // The group first: bwrap or pip may have children; the pgid cannot be reused while the
  // leader is unreaped (run_process detaches before reaping).
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

void KillSwitch::attach(pid_t pid) {
  std::lock_guard lock(mutex_);
  pid_ = pid;
  if (killed_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

void KillSwitch::detach() {
  std::lock_guard lock(mutex_);
  pid_ = -1;
}

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

struct Pipe {
  Fd read;
  Fd write;
};

Pipe make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    throw std::runtime_error("cannot create a pipe: " + errno_text(errno));
  }
  return {Fd(fds[0]), Fd(fds[1])};
}

// Keeps the last `cap` bytes of a stream and splits it into lines for a callback.
struct StreamSink {
  std::string kept;
  std::string partial;
  std::size_t cap;
  const std::function<void(std::string_view)>* on_line;

  void add(std::string_view data) {
    kept.append(data);
    if (kept.size() > cap) kept.erase(0, kept.size() - cap);
    if (on_line == nullptr || !*on_line) return;
    partial.append(data);
    std::size_t start = 0;
    for (std::size_t nl = partial.find('\n'); nl != std::string::npos;
         nl = partial.find('\n', start)) {
      std::string_view line(partial.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      (*on_line)(line);
      start = nl + 1;
    }
    partial.erase(0, start);
    // A line without an end (progress bars) must not grow without bound.
    if (partial.size() > 65536) partial.clear();
  }
  void finish() {
    if (!partial.empty() && on_line != nullptr && *on_line) (*on_line)(partial);
    partial.clear();
  }
};

// Which step of the child's setup failed, for the parent's message.
enum ChildStep : int { kStepIo = 1, kStepFds, kStepStage, kStepIdentity, kStepChdir, kStepExec };

const char* step_text(int step) {
  switch (step) {
    case kStepIo: return "redirecting stdio";
    case kStepFds: return "passing fds";
    case kStepStage: return "staging mounts for the unprivileged installer";
    case kStepIdentity: return "dropping to the unprivileged uid";
    case kStepChdir: return "changing directory";
    default: return "exec";
  }
}

[[noreturn]] void child_fail(int report_fd, int step, int err) {
  // Async-signal-safe: only write and _exit after fork.
  const int msg[2] = {step, err};
  ssize_t ignored = ::write(report_fd, msg, sizeof msg);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec,
                          const std::function<void(std::string_view line)>& on_line,
                          KillSwitch* kill_switch, std::size_t max_capture) {
  if (spec.argv.empty()) throw std::runtime_error("run_process: empty command");
  auto program = sandbox::find_executable(spec.argv[0]);
  if (!program) throw std::runtime_error("program not found: " + spec.argv[0]);

  // Everything the child needs is prepared before fork: after it only syscalls are allowed.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  std::vector<int> trees(spec.staged.size(), -1);  // filled in the child

  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw std::runtime_error("cannot open /dev/null: " + errno_text(errno));
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  Pipe report = make_pipe();

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + errno_text(errno));
  if (pid == 0) {
    const int rfd = report.write.get();
    ::setpgid(0, 0);
    if (::dup2(devnull.get(), 0) < 0 || ::dup2(out.write.get(), 1) < 0 ||
        ::dup2(err.write.get(), 2) < 0) {
      child_fail(rfd, kStepIo, errno);
    }
    // Belt and braces: nothing but the listed fds crosses exec, whatever another thread opened.
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    for (int fd : spec.pass_fds) {
      if (::fcntl(fd, F_SETFD, 0) != 0) child_fail(rfd, kStepFds, errno);
    }
    ::umask(022);
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    if (!spec.staged.empty()) {
      // Detached copies of the fds' mounts first (a bind source must be in the caller's mount
      // namespace, which the fds are only before unshare); then a private mount namespace, where
      // nothing is visible to the host or outlives the child.
      for (std::size_t i = 0; i < spec.staged.size(); ++i) {
        trees[i] = static_cast<int>(::syscall(SYS_open_tree, spec.staged[i].fd, "",
                                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                                  AT_RECURSIVE));
        if (trees[i] < 0) child_fail(rfd, kStepStage, errno);
      }
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("tmpfs", spec.stage_root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                  "mode=0755,size=64k") != 0) {
        child_fail(rfd, kStepStage, errno);
      }
      for (std::size_t i = 0; i < spec.staged.size(); ++i) {
        const char* stage = spec.staged[i].stage.c_str();
        if (spec.staged[i].directory) {
          if (::mkdir(stage, 0755) != 0) child_fail(rfd, kStepStage, errno);
        } else {
          const int f = ::open(stage, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
          if (f < 0) child_fail(rfd, kStepStage, errno);
          ::close(f);
        }
        if (::syscall(SYS_move_mount, trees[i], "", AT_FDCWD, stage, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
          child_fail(rfd, kStepStage, errno);
        }
      }
    }
    if (spec.run_as_uid) {
      const gid_t gid = spec.run_as_gid.value_or(*spec.run_as_uid);
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
          ::setresuid(*spec.run_as_uid, *spec.run_as_uid, *spec.run_as_uid) != 0) {
        child_fail(rfd, kStepIdentity, errno);
      }
    }
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) child_fail(rfd, kStepChdir, errno);
    ::execve(program->c_str(), argv.data(), envp.data());
    child_fail(rfd, kStepExec, errno);
  }

  // Parent. Whatever happens from here on (even an exception), the child is killed and reaped.
  struct Reaper {
    pid_t pid;
    KillSwitch* ks;
    bool reaped = false;
    ~Reaper() {
      if (ks != nullptr) ks->detach();
      if (reaped) return;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  } reaper{pid, kill_switch};
  if (kill_switch != nullptr) kill_switch->attach(pid);
  out.write = Fd();
  err.write = Fd();
  report.write = Fd();
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  ProcessResult result;
  int child_error[2] = {0, 0};  // step, errno; nothing read = exec succeeded
  {
    ssize_t n;
    do {
      n = ::read(report.read.get(), child_error, sizeof child_error);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof child_error)) child_error[0] = 0;
  }

  StreamSink sinks[2] = {{{}, {}, max_capture, &on_line}, {{}, {}, max_capture, &on_line}};
  const auto start = std::chrono::steady_clock::now();
  bool out_open = true, err_open = true, exited = false;
  std::array<char, 16384> buf{};
  while (out_open || err_open) {
    int wait_ms = -1;
    if (spec.timeout_ms > 0) {
      auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start).count();
      auto left = spec.timeout_ms - elapsed;
      if (left <= 0) {
        if (!result.timed_out) {
          result.timed_out = true;
          ::kill(-pid, SIGKILL);
          ::kill(pid, SIGKILL);
        }
        left = 0;
      }
      wait_ms = static_cast<int>(std::max<std::int64_t>(left, 0));
    }
    // Once the child is gone, leftover writers (a stray grandchild) must not keep us here.
    if (exited) wait_ms = 200;
    std::array<pollfd, 3> pfds{};
    nfds_t n = 0;
    int out_idx = -1, err_idx = -1, pid_idx = -1;
    if (out_open) { out_idx = static_cast<int>(n); pfds[n++] = {out.read.get(), POLLIN, 0}; }
    if (err_open) { err_idx = static_cast<int>(n); pfds[n++] = {err.read.get(), POLLIN, 0}; }
    if (pidfd && !exited) { pid_idx = static_cast<int>(n); pfds[n++] = {pidfd.get(), POLLIN, 0}; }
    if (result.timed_out && wait_ms == 0) wait_ms = 200;
    int rc = ::poll(pfds.data(), n, wait_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) {
      if (exited || result.timed_out) break;
      continue;
    }
    auto drain = [&](int idx, Fd& fd, bool& open, StreamSink& sink) {
      if (idx < 0 || pfds[static_cast<std::size_t>(idx)].revents == 0) return;
      ssize_t got = ::read(fd.get(), buf.data(), buf.size());
      if (got > 0) {
        sink.add(std::string_view(buf.data(), static_cast<std::size_t>(got)));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open = false;
      }
    };
    drain(out_idx, out.read, out_open, sinks[0]);
    drain(err_idx, err.read, err_open, sinks[1]);
    if (pid_idx >= 0 && pfds[static_cast<std::size_t>(pid_idx)].revents != 0) exited = true;
  }
  sinks[0].finish();
  sinks[1].finish();

  if (!exited && pidfd && !result.timed_out) {
    // Both pipes closed but the process is still there: give it the rest of its time.
    int wait_ms = -1;
    if (spec.timeout_ms > 0) {
      auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start).count();
      wait_ms = static_cast<int>(std::max<std::int64_t>(spec.timeout_ms - elapsed, 0));
    }
    pollfd p{pidfd.get(), POLLIN, 0};
    int rc;
    do {
      rc = ::poll(&p, 1, wait_ms);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) result.timed_out = true;
  }
  if (kill_switch != nullptr) {
    result.killed = kill_switch->killed();
    kill_switch->detach();
    reaper.ks = nullptr;
  }
  if (result.timed_out || result.killed) {
    // Whatever still runs in its group goes with it (the pgid is still ours: not reaped yet).
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  pid_t waited;
  do {
    waited = ::waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  reaper.reaped = true;
  if (waited == pid) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  }
  result.out = std::move(sinks[0].kept);
  result.err = std::move(sinks[1].kept);
  if (child_error[0] != 0) {
    throw std::runtime_error("cannot start " + spec.argv[0] + " (" + step_text(child_error[0]) +
                             "): " + errno_text(child_error[1]));
  }
  return result;
}

std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements) {
  std::vector<std::string> cmd;
  if (kind == InstallerKind::uv) {
    // Copies, never hard links: the environment must not share inodes with a writable cache.
    cmd = {uv_program, "pip", "install", "--target", target, "--python", interpreter.executable,
           "--cache-dir", cache_dir, "--link-mode", "copy", "--compile-bytecode", "--no-progress"};
  } else {
    // -I: no PYTHON* variables, no user site, no cwd on sys.path.
    cmd = {interpreter.executable, "-I", "-m", "pip", "install", "--target", target,
           "--no-input", "--disable-pip-version-check", "--no-warn-script-location",
           "--progress-bar", "off", "--cache-dir", cache_dir};
  }
  if (index.offline) {
    cmd.emplace_back(kind == InstallerKind::uv ? "--offline" : "--no-index");
  }
  if (index.index_url && !(index.offline && kind == InstallerKind::pip)) {
    cmd.emplace_back("--index-url");
    cmd.push_back(*index.index_url);
  }
  if (!(index.offline && kind == InstallerKind::pip)) {
    for (const auto& url : index.extra_index_urls) {
      cmd.emplace_back("--extra-index-url");
      cmd.push_back(url);
    }
  }
  for (const auto& link : index.find_links) {
    cmd.emplace_back("--find-links");
    cmd.push_back(link);
  }
  cmd.emplace_back("--");
  cmd.insert(cmd.end(), requirements.begin(), requirements.end());
  return cmd;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "OSError: [Errno 28] ...", "pip._vendor.x.ReadTimeoutError: ..." at the start of a line: the
// last line of a Python traceback.
bool is_exception_line(std::string_view line) {
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view name = line.substr(0, colon);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exit");
}

std::string sigabbrev(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

}  // namespace

std::string decisive_lines(std::string_view output) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= output.size();) {
    auto nl = output.find('\n', start);
    if (nl == std::string_view::npos) nl = output.size();
    lines.push_back(output.substr(start, nl - start));
    start = nl + 1;
  }
  std::vector<std::string_view> picked;
  bool in_block = false;  // a multi-line explanation that follows a decisive line
  bool pip_exception = false;  // after pip's "ERROR: Exception:" (a traceback follows)
  for (auto raw : lines) {
    auto line = trim(raw);
    if (line.empty()) {
      in_block = false;
      continue;
    }
    if (pip_exception && is_exception_line(raw)) {
      // pip's "ERROR: Exception:" is followed by a traceback whose last line names the cause
      // (e.g. "OSError: [Errno 28] No space left on device: '...'").
      picked.push_back(line);
      in_block = false;
    } else if (starts_with(line, "ERROR:") || starts_with(line, "error:")) {
      if (line == "ERROR: Exception:") pip_exception = true;
      picked.push_back(line);
      in_block = starts_with(line, "error:");  // uv explains below its error line
    } else if (starts_with(line, "The conflict is caused by:")) {
      picked.push_back(line);
      in_block = true;
    } else if (starts_with(line, "To fix this") || starts_with(line, "hint:")) {
      in_block = false;
    } else if (starts_with(line, "\u00d7") || starts_with(line, "\u2570\u2500\u25b6") ||
               starts_with(line, "\u251c\u2500\u25b6")) {
      picked.push_back(line);  // uv: "× No solution found", "╰─▶ Because ..."
      in_block = true;
    } else if (in_block && (raw.size() > line.size())) {
      picked.push_back(line);  // indented continuation
    } else {
      in_block = false;
    }
  }
  if (picked.empty()) {
    // Nothing recognisable: the last few lines say the most.
    for (auto it = lines.rbegin(); it != lines.rend() && picked.size() < 12; ++it) {
      auto line = trim(*it);
      if (!line.empty()) picked.insert(picked.begin(), line);
    }
  }
  std::string text;
  std::size_t count = 0;
  for (auto line : picked) {
    if (count == 30 || text.size() + line.size() > 4000) {
      text += "[... more installer output omitted]\n";
      break;
    }
    // pip repeats its "ERROR:" line for the same requirement once per attempt.
    std::string entry(line);
    if (text.find(entry + "\n") != std::string::npos) continue;
    text += entry;
    text += '\n';
    ++count;
  }
  if (!text.empty()) text.pop_back();
  return text;
}

InstallerIdentity installer_identity(const InstallerOptions& options) {
  if (options.sandboxed && ::geteuid() == 0) {
    return {options.unprivileged_uid, options.unprivileged_gid, true};
  }
  return {::geteuid(), ::getegid(), false};
}

namespace {

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::string real_path(const std::string& path) {
  std::error_code ec;
  auto r = fs::canonical(path, ec);
  return ec ? std::string() : r.string();
}

// Host paths the installer sees at the same place. For a root server the unprivileged
// installer may not traverse to them (pyenv under /root is 0700): they are staged through
// O_PATH fds (see StagedPath); otherwise bound by path.
struct BwrapMounts {
  bool staged = false;
  std::vector<std::string> args;
  std::vector<Fd> fds;
  std::vector<StagedPath> stage;
  std::vector<std::string> ro_mounted;  // real paths already mounted read-only

  void bind(const std::string& path, bool writable) {
    if (!staged) {
      args.insert(args.end(), {writable ? "--bind" : "--ro-bind", path, path});
      return;
    }
    Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    struct stat st{};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
      throw InstallerUnavailable("cannot open " + path + " for the installer sandbox: " +
                                 errno_text(errno));
    }
    StagedPath sp{fd.get(), "/tmp/" + std::to_string(stage.size()), S_ISDIR(st.st_mode)};
    args.insert(args.end(), {writable ? "--bind" : "--ro-bind", sp.stage, path});
    stage.push_back(sp);
    fds.push_back(std::move(fd));
  }
  void ro(const std::string& path) {
    auto real = real_path(path);
    if (real.empty() || under(real, "/usr")) return;
    for (const auto& done : ro_mounted) {
      if (under(real, done)) return;
    }
    bind(real, false);
    ro_mounted.push_back(real);
  }
};

std::string local_find_links_path(const std::string& link) {
  if (starts_with(link, "file://")) return link.substr(7);
  if (link.find("://") != std::string::npos) return {};
  return link;
}

}  // namespace

InstallOutcome run_installer(const InstallerOptions& options, const InstallRequest& request,
                             const std::function<void(std::string_view line)>& on_line,
                             KillSwitch* kill_switch) {
  if (request.interpreter == nullptr) throw std::invalid_argument("run_installer: no interpreter");
  const Interpreter& interp = *request.interpreter;

  auto uv = sandbox::find_executable(options.uv_path);
  InstallerKind kind;
  std::string uv_program;
  if (uv) {
    kind = InstallerKind::uv;
    uv_program = real_path(*uv);
  } else if (request.interpreter_has_pip) {
    kind = InstallerKind::pip;
  } else {
    throw InstallerUnavailable(
        "no package installer: uv was not found (--uv-path '" + options.uv_path + "') and " +
        interp.executable + " has no pip module; install uv, or pip for that interpreter "
        "(Debian: apt install python3-pip)");
  }

  const std::string cache = request.cache_dir + (kind == InstallerKind::uv ? "/uv" : "/pip");
  const InstallerIdentity who = installer_identity(options);
  {
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (ec) throw InstallerUnavailable("cannot create the installer cache " + cache + ": " + ec.message());
    if (who.dropped && ::chown(cache.c_str(), who.uid, who.gid) != 0) {
      throw InstallerUnavailable("cannot hand the installer cache " + cache + " to uid " +
                                 std::to_string(who.uid) + ": " + errno_text(errno));
    }
  }

  std::vector<std::string> command = installer_command(
      kind, uv_program, interp, request.target, cache, options.index, request.requirements);

  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
                                  "LANG=C.UTF-8", "PYTHONNOUSERSITE=1", "PIP_NO_INPUT=1",
                                  // No host pip.conf: index options are passed explicitly.
                                  "PIP_CONFIG_FILE=/dev/null", "UV_NO_CONFIG=1",
                                  "NO_COLOR=1"};
  for (const char* name : {"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY",
                           "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}) {
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }

  ProcessSpec spec;
  spec.env = env;
  spec.timeout_ms = options.timeout_seconds * 1000;
  BwrapMounts mounts;
  mounts.staged = who.dropped;
  if (options.sandboxed) {
    auto bwrap = sandbox::find_executable(options.bwrap_path);
    if (!bwrap) {
      throw InstallerUnavailable(
          "bubblewrap (" + options.bwrap_path + ") was not found, so dependencies cannot be "
          "installed safely; install it (Debian/Ubuntu: apt install bubblewrap) or run with "
          "--sandbox-backend none");
    }
    auto& a = mounts.args;
    a = {*bwrap, "--unshare-all"};
    if (!options.index.offline) a.emplace_back("--share-net");
    a.insert(a.end(), {"--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                       "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
                       "--tmpfs", "/tmp"});
    for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
      std::error_code ec;
      auto st = fs::symlink_status(top, ec);
      if (ec) continue;
      if (fs::is_symlink(st)) {
        a.insert(a.end(), {"--symlink", fs::read_symlink(top, ec).string(), top});
      } else if (fs::is_directory(st)) {
        a.insert(a.end(), {"--ro-bind", top, top});
      }
    }
    for (std::string etc : {"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/resolv.conf",
                            "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
                            "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                            "/etc/alternatives", "/etc/localtime", "/etc/mime.types"}) {
      a.insert(a.end(), {"--ro-bind-try", etc, etc});
    }
    if (!interp.major_minor.empty()) {
      // Debian's interpreters read /etc/pythonX.Y/sitecustomize.py.
      std::string etc_python = "/etc/python" + interp.major_minor;
      a.insert(a.end(), {"--ro-bind-try", etc_python, etc_python});
    }
    mounts.ro(interp.prefix);
    mounts.ro(interp.base_prefix);
    mounts.ro(fs::path(interp.executable).parent_path().string());
    for (const auto& dir : interp.site_packages) mounts.ro(dir);
    if (kind == InstallerKind::uv) mounts.ro(uv_program);
    for (const auto& link : options.index.find_links) {
      auto local = local_find_links_path(link);
      if (!local.empty() && fs::exists(local)) mounts.ro(local);
    }
    mounts.bind(request.target, true);
    mounts.bind(cache, true);
    a.insert(a.end(), {"--chdir", "/tmp", "--"});
    a.insert(a.end(), command.begin(), command.end());
    spec.argv = a;
    spec.staged = mounts.stage;
    if (who.dropped) {
      spec.run_as_uid = who.uid;
      spec.run_as_gid = who.gid;
    }
  } else {
    spec.argv = command;
  }

  InstallOutcome outcome;
  outcome.installer = kind == InstallerKind::uv ? "uv" : "pip";
  if (spdlog::should_log(spdlog::level::debug)) {
    std::string line;
    for (const auto& arg : spec.argv) line += (line.empty() ? "" : " ") + arg;
    spdlog::debug("installer command: {}", line);
  }
  spdlog::info("installing {} requirement(s) with {} into {}", request.requirements.size(),
               outcome.installer, request.target);
  outcome.process = run_process(spec, on_line, kill_switch);
  const auto& p = outcome.process;
  outcome.ok = p.ok();
  if (!outcome.ok) {
    if (p.killed) {
      outcome.error = "the installation was stopped (server shutting down or install cancelled)";
    } else if (p.timed_out) {
      outcome.error = "the installer did not finish within " +
                      std::to_string(options.timeout_seconds) + " s";
    } else {
      std::string lines = decisive_lines(p.err + "\n" + p.out);
      // Killed from outside (OOM killer, an operator): say so before whatever it printed last.
      // Under bubblewrap the installer's signal comes back as exit status 128 + signal.
      const int signal = p.term_signal != 0                                    ? p.term_signal
                         : options.sandboxed && p.exit_code > 128 && p.exit_code < 128 + 65 ? p.exit_code - 128
                                                                               : 0;
      if (signal != 0) {
        lines = "the installer (" + outcome.installer + ") was killed by signal " + std::to_string(signal) +
                " (" + sigabbrev(signal) + ") before it finished" + (lines.empty() ? "" : "; its last output:\n" + lines);
      }
      // bwrap failing to set up the sandbox is the host's problem, not the requirements'.
      if (options.sandboxed && lines.rfind("bwrap:", 0) == 0) {
        throw InstallerUnavailable("the installer sandbox could not start (" + lines +
                                   "); user namespaces may be disabled on this host");
      }
      outcome.error = lines;
    }
  }
  return outcome;
}

}  // namespace engine::deps
