#include "engine/event_loop.h"  // first: see there
#include "engine/pool/zygote_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "sandbox/bwrap_command.h"
#include "sandbox/mounts.h"

namespace engine {
namespace {

using sandbox::UniqueFd;

constexpr const char* kZygoteInside = "/run/mpes/zygote";
constexpr const char* kEnvInside = "/run/mpes/env";
constexpr std::size_t kStderrTailBytes = 2048;

std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

bool is_under(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir.back() == '/';
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

// Host paths the zygote must see read-only at the same place, beyond /usr: the interpreter's
// prefix and base prefix, its libpython's directory, extra policy paths.
std::vector<std::string> host_paths_to_bind(const ZygoteLaunch& launch) {
  std::vector<std::string> paths;
  auto want = [&paths](const std::string& path) {
    if (path.empty() || is_under(path, "/usr")) return;
    for (const auto& p : paths) {
      if (is_under(path, p)) return;
    }
    paths.push_back(path);
  };
  const Interpreter& in = launch.interpreter;
  want(in.prefix);
  want(in.base_prefix);
  if (!in.libpython.empty()) want(parent_dir(in.libpython));
  if (!in.executable.empty()) want(parent_dir(in.executable));
  for (const auto& p : launch.policy.ro_paths) want(p);
  return paths;
}

std::vector<std::string> zygote_arguments(const ZygoteLaunch& launch) {
  const Interpreter& in = launch.interpreter;
  const auto& limits = launch.policy.limits;
  const bool native = launch.policy.backend == sandbox::Backend::native;
  std::vector<std::string> sys_path = in.sys_path;
  if (!launch.env_root.empty()) {
    sys_path.insert(sys_path.begin(), (native ? std::string(kEnvInside) : launch.env_root) + "/site");
  }
  std::string run_path = "/usr/local/bin:/usr/bin:/bin";
  if (!in.executable.empty()) {
    const std::string bin = parent_dir(in.executable);
    if (bin != "/usr/bin" && bin != "/usr/local/bin" && bin != "/bin") run_path = bin + ":" + run_path;
  }
  // Without a shared libpython the zygote cannot embed the interpreter: each run execs it.
  const bool spawn = in.libpython.empty();
  return {spawn ? "--spawn-executable" : "--libpython", spawn ? in.executable : in.libpython,
          // A venv is not a PYTHONHOME: its base is; the venv's paths come back with sys.path.
          "--home", in.base_prefix.empty() ? in.prefix : in.base_prefix,
          "--executable", in.executable,
          "--run-path", run_path,
          "--preload", join(launch.preload, ','),
          "--sys-path", join(sys_path, '\n'),
          "--prefix", in.prefix,
          "--backend", native ? "native" : "none",
          "--network", launch.policy.network ? "on" : "off",
          "--tmpfs-bytes", std::to_string(limits.tmpfs_bytes),
          "--memory-bytes", std::to_string(limits.memory_bytes),
          "--max-processes", std::to_string(limits.max_processes),
          "--cpu-seconds", std::to_string(limits.cpu_seconds),
          "--file-size-bytes", std::to_string(limits.file_size_bytes),
          "--open-files", std::to_string(limits.open_files),
          "--rlimit-memory", launch.rlimit_fallbacks.memory ? "1" : "0",
          "--rlimit-processes", launch.rlimit_fallbacks.processes ? "1" : "0",
          "--max-value-bytes", std::to_string(launch.max_value_bytes),
          "--max-images", std::to_string(launch.max_images)};
}

std::vector<std::string> zygote_environment() {
  // LD_BIND_NOW: every symbol the zygote's libraries use is resolved once, in the zygote, rather
  // than again (and with a copy-on-write of the GOT page) in every run's processes.
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LD_BIND_NOW=1", "OPENBLAS_NUM_THREADS=1",
          "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "NUMEXPR_NUM_THREADS=1"};
}

// The bwrap argv; the generated passwd and group are read from fds `data_fd` and `data_fd + 1`.
std::vector<std::string> bwrap_argv(const ZygoteLaunch& launch, const std::vector<std::string>& binds,
                                    int data_fd) {
  sandbox::ZygoteSandbox box;
  box.bwrap_path = launch.bwrap_path;
  box.network = launch.policy.network;
  box.binds.push_back({launch.zygote_path, kZygoteInside});
  for (const auto& path : binds) box.binds.push_back({path, path});
  if (!launch.env_root.empty()) box.binds.push_back({launch.env_root, kEnvInside});
  box.data_files.push_back({data_fd, "/etc/passwd"});
  box.data_files.push_back({data_fd + 1, "/etc/group"});
  box.etc_allowlist = sandbox::default_etc_allowlist(launch.interpreter.major_minor);
  box.work_dir = sandbox::kRunWorkDir;
  box.command = {kZygoteInside};
  const auto args = zygote_arguments(launch);
  box.command.insert(box.command.end(), args.begin(), args.end());
  return sandbox::build_bwrap_argv(box);
}

UniqueFd data_memfd(const std::string& name, const std::string& data) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, name.c_str(), MFD_CLOEXEC)));
  if (!fd) throw std::runtime_error(errno_text("memfd_create", errno));
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    throw std::runtime_error(errno_text("writing " + name, errno));
  }
  return fd;
}

// Everything the forked child needs, prepared before fork: after fork in a threaded server only
// async-signal-safe calls are allowed, so no allocation happens there.
struct ExecPlan {
  std::vector<std::string> argv_storage, env_storage;
  sandbox::HostStaging staging;
  std::vector<std::string> staged_paths;  // bound back under the hide points
  std::vector<char*> argv, env;
  std::vector<int> fds;  // fds[i] becomes fd 3 + i
  int stdin_fd = -1, stderr_fd = -1;
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

[[noreturn]] void exec_child(const ExecPlan& plan) {
  auto die = [&plan](const char* what) {
    const int err = errno;
    const char* text = std::strerror(err);  // glibc: a static table, no allocation
    [[maybe_unused]] ssize_t n = ::write(plan.stderr_fd, what, std::strlen(what));
    n = ::write(plan.stderr_fd, ": ", 2);
    n = ::write(plan.stderr_fd, text, std::strlen(text));
    n = ::write(plan.stderr_fd, "\n", 1);
    ::_exit(127);
  };
  if (!plan.staging.empty()) {
    // See sandbox::HostStaging: a private mount namespace where private directories hold only
    // what the sandbox needs, reachable by the unprivileged uid.
    if (::unshare(CLONE_NEWNS) != 0) die("unshare(CLONE_NEWNS) for staging");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("mount --make-rprivate /");
    // Held by fd before the tmpfs hides them (a bind source must be in this mount namespace,
    // so these are opened here, not in the server).
    int held[64];
    const std::size_t n_held = std::min<std::size_t>(plan.staged_paths.size(), 64);
    for (std::size_t i = 0; i < n_held; ++i) {
      held[i] = ::open(plan.staged_paths[i].c_str(), O_PATH | O_CLOEXEC);
      if (held[i] < 0) die("open a staged path");
    }
    for (const auto& point : plan.staging.hide_points) {
      if (::mount("tmpfs", point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) die("mount tmpfs");
    }
    for (const auto& dir : plan.staging.dirs) {
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) die("mkdir");
    }
    for (const auto& file : plan.staging.files) {
      const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) die("create mount point");
      ::close(fd);
    }
    for (std::size_t i = 0; i < n_held; ++i) {
      char source[32] = "/proc/self/fd/";
      char digits[12];
      int len = 0;
      for (int v = held[i]; len == 0 || v > 0; v /= 10) digits[len++] = static_cast<char>('0' + v % 10);
      std::size_t at = std::strlen(source);
      while (len > 0) source[at++] = digits[--len];
      source[at] = '\0';
      if (::mount(source, plan.staged_paths[i].c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
        die("bind a staged path");
      }
      ::close(held[i]);
    }
  }
  if (plan.drop) {
    if (::setgroups(0, nullptr) != 0) die("setgroups");
    if (::setresgid(plan.gid, plan.gid, plan.gid) != 0) die("setresgid");
    if (::setresuid(plan.uid, plan.uid, plan.uid) != 0) die("setresuid");
  }
  // Lift every fd above the target range, then put each in place (dup2 clears close-on-exec).
  const int base = 3 + static_cast<int>(plan.fds.size()) + 8;
  int moved[64];
  const std::size_t count = std::min<std::size_t>(plan.fds.size(), 64);
  for (std::size_t i = 0; i < count; ++i) {
    moved[i] = ::fcntl(plan.fds[i], F_DUPFD_CLOEXEC, base);
    if (moved[i] < 0) die("fcntl");
  }
  const int err_moved = ::fcntl(plan.stderr_fd, F_DUPFD_CLOEXEC, base);
  if (::dup2(plan.stdin_fd, 0) < 0 || ::dup2(err_moved, 1) < 0 || ::dup2(err_moved, 2) < 0) die("dup2");
  for (std::size_t i = 0; i < count; ++i) {
    if (::dup2(moved[i], 3 + static_cast<int>(i)) < 0) die("dup2");
  }
  ::syscall(SYS_close_range, static_cast<unsigned>(3 + count), ~0U, 0U);
  ::execve(plan.argv[0], plan.argv.data(), plan.env.data());
  die(plan.argv[0]);
  ::_exit(127);
}

}  // namespace

const char* to_string(ZygoteProcess::State state) {
  switch (state) {
    case ZygoteProcess::State::starting: return "starting";
    case ZygoteProcess::State::ready: return "ready";
    case ZygoteProcess::State::failed: return "failed";
    case ZygoteProcess::State::stopped: return "stopped";
  }
  return "unknown";
}

ZygoteCommand describe_zygote_command(const ZygoteLaunch& launch) {
  ZygoteCommand cmd;
  if (launch.policy.backend == sandbox::Backend::native) {
    cmd.argv = bwrap_argv(launch, host_paths_to_bind(launch), 4);  // fd 3 is the control socket
  } else {
    cmd.argv = {launch.zygote_path};
    const auto args = zygote_arguments(launch);
    cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  }
  cmd.env = zygote_environment();
  return cmd;
}

ZygoteProcess::ZygoteProcess(asio::io_context& io, ZygoteLaunch launch)
    : io_(io), launch_(std::move(launch)), control_(io), stderr_(io), pidfd_(io), kill_timer_(io) {}

ZygoteProcess::~ZygoteProcess() {
  for (auto& out : outbox_) {
    for (int fd : out.fds) ::close(fd);
  }
  if (pid_ > 0 && !reaped_) {
    // Last resort (normally stop() and the exit watch reap it): never leave a zombie.
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void ZygoteProcess::start(std::function<void(State, const std::string&)> on_state) {
  on_state_ = std::move(on_state);
  try {
    spawn();
  } catch (const std::exception& e) {
    state_ = State::failed;
    failure_ = e.what();
    auto self = shared_from_this();
    asio::post(io_, [self] {
      if (self->on_state_) self->on_state_(State::failed, self->failure_);
    });
    return;
  }
  wait_control();
  read_stderr();
  watch_exit();
}

void ZygoteProcess::spawn() {
  const bool native = launch_.policy.backend == sandbox::Backend::native;
  if (::access(launch_.zygote_path.c_str(), X_OK) != 0) {
    throw std::runtime_error(errno_text("the zygote binary " + launch_.zygote_path +
                                            " is missing (it is built next to the server)", errno));
  }
  if (native && (launch_.bwrap_path.empty() || ::access(launch_.bwrap_path.c_str(), X_OK) != 0)) {
    throw std::runtime_error(
        "bubblewrap (bwrap) is not installed, so the native sandbox cannot start: install it "
        "(Debian/Ubuntu: apt install bubblewrap), or run with --sandbox-backend none to execute "
        "unsandboxed");
  }

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    throw std::runtime_error(errno_text("socketpair", errno));
  }
  UniqueFd server_end(sv[0]), zygote_end(sv[1]);
  int ep[2];
  if (::pipe2(ep, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe", errno));
  UniqueFd err_rd(ep[0]), err_wr(ep[1]);
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null) throw std::runtime_error(errno_text("open /dev/null", errno));

  ExecPlan plan;
  std::vector<UniqueFd> keep;  // fds to pass, closed in the parent after fork
  plan.fds.push_back(zygote_end.get());
  if (native) {
    const auto binds = host_paths_to_bind(launch_);
    for (const auto& [name, data] : {std::pair<std::string, std::string>{"passwd", sandbox::minimal_passwd()},
                                     {"group", sandbox::minimal_group()}}) {
      UniqueFd fd = data_memfd(name, data);
      plan.fds.push_back(fd.get());
      keep.push_back(std::move(fd));
    }
    plan.argv_storage = bwrap_argv(launch_, binds, 4);
    plan.drop = ::geteuid() == 0;
    plan.uid = launch_.unprivileged_uid;
    plan.gid = launch_.unprivileged_gid;
    if (plan.drop) {
      // Paths the unprivileged uid cannot reach are staged (see sandbox::HostStaging), from fds
      // opened here as root.
      std::vector<std::string> paths = {launch_.zygote_path};
      paths.insert(paths.end(), binds.begin(), binds.end());
      if (!launch_.env_root.empty()) paths.push_back(launch_.env_root);
      std::vector<bool> dirs;
      for (const auto& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) {
          throw std::runtime_error(errno_text("cannot use " + path + " in the sandbox", errno));
        }
        dirs.push_back(S_ISDIR(st.st_mode));
      }
      plan.staging = sandbox::plan_host_staging(
          paths, [&dirs](std::size_t i) { return dirs[i]; },
          [](const std::string& dir) {
            struct stat st {};
            return ::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) != 0;
          });
      for (std::size_t i : plan.staging.bound) plan.staged_paths.push_back(paths[i]);
    }
  } else {
    plan.argv_storage = {launch_.zygote_path};
    const auto args = zygote_arguments(launch_);
    plan.argv_storage.insert(plan.argv_storage.end(), args.begin(), args.end());
  }
  plan.env_storage = zygote_environment();
  for (auto& s : plan.argv_storage) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  for (auto& s : plan.env_storage) plan.env.push_back(s.data());
  plan.env.push_back(nullptr);
  plan.stdin_fd = dev_null.get();
  plan.stderr_fd = err_wr.get();
  if (plan.fds.size() > 64) throw std::runtime_error("too many paths to bind into the sandbox");

  spdlog::debug("starting zygote for Python {}: {}", launch_.interpreter.version, join(plan.argv_storage, ' '));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(errno_text("fork", errno));
  if (pid == 0) exec_child(plan);
  pid_ = pid;

  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    reaped_ = true;
    throw std::runtime_error(errno_text("pidfd_open (Linux >= 5.3 is required)", err));
  }
  ::fcntl(server_end.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_rd.get(), F_SETFL, O_NONBLOCK);
  control_.assign(server_end.release());
  stderr_.assign(err_rd.release());
  pidfd_.assign(pidfd.release());
}

void ZygoteProcess::wait_control() {
  auto self = shared_from_this();
  control_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const std::error_code& ec) {
    if (ec || !self->control_.is_open()) return;
    self->on_control();
  });
}

void ZygoteProcess::on_control() {
  for (;;) {
    zygote::Received got = zygote::receive_message(control_.native_handle());
    if (got.status == zygote::Received::Status::would_block) break;
    if (got.status == zygote::Received::Status::eof) {
      if (state_ == State::ready) lose("zygote lost: its control socket closed");
      // While starting, the process exit (watch_exit) reports why, with its stderr.
      return;
    }
    if (got.status == zygote::Received::Status::error) {
      spdlog::warn("zygote[{}]: {}", launch_.interpreter.major_minor, got.error);
      continue;
    }
    if (const auto* ready = std::get_if<zygote::ReadyMessage>(&got.message)) {
      python_version_ = ready->python_version;
      rss_bytes_ = ready->rss_bytes;
      warnings_ = ready->warnings;
      if (ready->tasks != 1) {
        spdlog::warn("zygote[{}] has {} threads after warm-up: runs will be refused",
                     launch_.interpreter.major_minor, ready->tasks);
      }
      if (state_ == State::starting) {
        state_ = State::ready;
        spdlog::info("zygote for Python {} ready (RSS {} MiB)", python_version_, rss_bytes_ >> 20);
        if (on_state_) on_state_(State::ready, "");
      }
    } else if (const auto* started = std::get_if<zygote::StartedMessage>(&got.message)) {
      auto it = runs_.find(started->run_id);
      UniqueFd pidfd = got.fds.empty() ? UniqueFd() : std::move(got.fds.front());
      if (it != runs_.end() && it->second.started) it->second.started(started->pid, std::move(pidfd));
    } else if (const auto* exited = std::get_if<zygote::ExitedMessage>(&got.message)) {
      rss_bytes_ = exited->zygote_rss_bytes;
      auto it = runs_.find(exited->run_id);
      if (it != runs_.end()) {
        RunCallbacks callbacks = std::move(it->second);
        runs_.erase(it);
        if (callbacks.exited) callbacks.exited(*exited);
      }
    } else if (const auto* refused = std::get_if<zygote::RefusedMessage>(&got.message)) {
      auto it = runs_.find(refused->run_id);
      if (it != runs_.end()) {
        RunCallbacks callbacks = std::move(it->second);
        runs_.erase(it);
        if (callbacks.failed) callbacks.failed("the zygote refused the run: " + refused->reason);
      }
    }
  }
  if (state_ == State::starting || state_ == State::ready) wait_control();
}

void ZygoteProcess::read_stderr() {
  auto self = shared_from_this();
  auto buffer = std::make_shared<std::array<char, 4096>>();
  stderr_.async_read_some(asio::buffer(*buffer), [self, buffer](const std::error_code& ec, std::size_t n) {
    if (n > 0) {
      self->stderr_line_.append(buffer->data(), n);
      std::size_t nl;
      while ((nl = self->stderr_line_.find('\n')) != std::string::npos) {
        const std::string line = self->stderr_line_.substr(0, nl);
        self->stderr_line_.erase(0, nl + 1);
        spdlog::info("zygote[{}]: {}", self->launch_.interpreter.major_minor, line);
        self->stderr_tail_ += line + "\n";
      }
      if (self->stderr_line_.size() > 4096) self->stderr_line_.erase(0, self->stderr_line_.size() - 4096);
      if (self->stderr_tail_.size() > kStderrTailBytes) {
        self->stderr_tail_.erase(0, self->stderr_tail_.size() - kStderrTailBytes);
      }
    }
    if (!ec && self->stderr_.is_open()) self->read_stderr();
  });
}

void ZygoteProcess::watch_exit() {
  auto self = shared_from_this();
  pidfd_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const std::error_code& ec) {
    if (ec || self->reaped_) return;
    int status = 0;
    const pid_t r = ::waitpid(self->pid_, &status, WNOHANG);
    if (r == 0) {  // not yet a zombie (spurious wake-up)
      self->watch_exit();
      return;
    }
    self->reaped_ = true;
    self->pidfd_.close();
    // Take what is left on stderr: it usually says why (bwrap's or the interpreter's error).
    char buf[4096];
    for (ssize_t n; self->stderr_.is_open() && (n = ::read(self->stderr_.native_handle(), buf, sizeof buf)) > 0;) {
      self->stderr_line_.append(buf, static_cast<std::size_t>(n));
    }
    if (!self->stderr_line_.empty()) {
      self->stderr_tail_ += self->stderr_line_;
      self->stderr_line_.clear();
    }
    std::string how = WIFEXITED(status)   ? "exited with status " + std::to_string(WEXITSTATUS(status))
                      : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                            : "ended";
    if (self->state_ == State::starting) {
      std::string tail = self->stderr_tail_;
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      self->failure_ = "the Python " + self->launch_.interpreter.version + " zygote " + how +
                       " before it was ready" + (tail.empty() ? "" : ": " + tail);
      self->state_ = State::failed;
      self->stderr_.close();
      self->control_.close();
      if (self->on_state_) self->on_state_(State::failed, self->failure_);
    } else if (self->state_ == State::ready) {
      self->lose("zygote lost: it " + how);
    } else {
      self->stderr_.close();
      self->control_.close();
    }
    self->notify_reaped();
  });
}

void ZygoteProcess::lose(const std::string& reason) {
  if (state_ != State::ready) return;
  state_ = State::failed;
  failure_ = reason;  // (logged by whoever handles on_state)
  control_.close();
  if (!reaped_ && pid_ > 0) ::kill(pid_, SIGKILL);
  auto runs = std::move(runs_);
  runs_.clear();
  for (auto& [id, callbacks] : runs) {
    if (callbacks.failed) callbacks.failed(reason);
  }
  if (on_state_) on_state_(State::failed, reason);
}

bool ZygoteProcess::run(std::uint64_t run_id, std::uint32_t timeout_seconds, std::vector<int> fds,
                        RunCallbacks callbacks) {
  if (state_ != State::ready) return false;
  last_used_ = std::chrono::steady_clock::now();
  // Own duplicates: the caller keeps (and closes) its fds right after this call.
  Outgoing out{zygote::RunMessage{run_id, timeout_seconds, zygote::kRunFlagNone}, {}};
  for (int fd : fds) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (dup < 0) {
      // Out of fds (EMFILE): the run fails with that reason; nothing is sent or leaked.
      const int err = errno;
      for (int d : out.fds) ::close(d);
      std::string why = errno_text("cannot pass the run's files to the zygote", err);
      if (err == EMFILE || err == ENFILE) why += " (the server has reached its open-file limit, ulimit -n)";
      if (callbacks.failed) callbacks.failed(why);
      return true;
    }
    out.fds.push_back(dup);
  }
  runs_[run_id] = std::move(callbacks);
  outbox_.push_back(std::move(out));
  flush_outbox();
  return true;
}

void ZygoteProcess::flush_outbox() {
  while (!outbox_.empty() && !writing_ && control_.is_open()) {
    Outgoing& out = outbox_.front();
    const int err = zygote::send_message(control_.native_handle(), out.message, out.fds);
    if (err == EAGAIN || err == EWOULDBLOCK) {
      writing_ = true;
      auto self = shared_from_this();
      control_.async_wait(asio::posix::stream_descriptor::wait_write, [self](const std::error_code& ec) {
        self->writing_ = false;
        if (!ec) self->flush_outbox();
      });
      return;
    }
    const std::uint64_t id = out.message.run_id;
    for (int fd : out.fds) ::close(fd);
    outbox_.erase(outbox_.begin());
    if (err != 0) {
      auto it = runs_.find(id);
      if (it != runs_.end()) {
        RunCallbacks callbacks = std::move(it->second);
        runs_.erase(it);
        if (callbacks.failed) callbacks.failed(errno_text("cannot send the run to the zygote", err));
      }
    }
  }
}

void ZygoteProcess::stop(std::function<void()> on_reaped) {
  if (on_reaped) on_reaped_.push_back(std::move(on_reaped));
  if (state_ != State::stopped) {
    state_ = State::stopped;
    auto runs = std::move(runs_);
    runs_.clear();
    for (auto& [id, callbacks] : runs) {
      if (callbacks.failed) callbacks.failed("the server is shutting down");
    }
    control_.close();  // the zygote sees EOF, kills its runs, reaps them and exits
    if (!reaped_ && pid_ > 0) {
      auto self = shared_from_this();
      kill_timer_.expires_after(std::chrono::seconds(1));
      kill_timer_.async_wait([self](const std::error_code& ec) {
        if (!ec && !self->reaped_) ::kill(self->pid_, SIGKILL);
      });
    }
  }
  if (reaped_ || pid_ <= 0) notify_reaped();
}

void ZygoteProcess::notify_reaped() {
  auto callbacks = std::move(on_reaped_);
  on_reaped_.clear();
  kill_timer_.cancel();
  for (auto& callback : callbacks) asio::post(io_, std::move(callback));
}

}  // namespace engine
