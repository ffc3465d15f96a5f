#include "engine/event_loop.h"  // first: see there
#include "engine/pool/zygote_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "sandbox/bwrap_command.h"
#include "sandbox/memfd.h"
#include "sandbox/mounts.h"
#include "sandbox/os_error.h"
#include "sandbox/owned_dirs.h"

namespace engine {
namespace {

// An unsandboxed zygote's directory, with whatever its runs left there.
void remove_work_root(const std::string& root) {
  std::error_code ignored;
  std::filesystem::remove_all(root, ignored);
}

constexpr const char* kNoFdsForSpare =
    "the server is out of file descriptors (it could not receive a spare's pidfd and hand-off "
    "socket; raise ulimit -n)";

using sandbox::errno_text;
using sandbox::UniqueFd;

constexpr const char* kZygoteInside = "/run/mpes/zygote";
constexpr const char* kEnvInside = "/run/mpes/env";
constexpr std::size_t kStderrTailBytes = 2048;

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
  auto want = [&paths](const std::string& path) { sandbox::add_host_path(paths, path); };
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
  const bool sandboxed = launch.policy.backend != sandbox::Backend::none;
  std::vector<std::string> sys_path = in.sys_path;
  if (!launch.env_root.empty()) {
    sys_path.insert(sys_path.begin(), (sandboxed ? std::string(kEnvInside) : launch.env_root) + "/site");
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
          "--backend", std::string(sandbox::to_string(launch.policy.backend)),
          "--network", launch.runs_routed ? "routed" : launch.policy.network ? "on" : "off",
          "--tmpfs-bytes", std::to_string(limits.tmpfs_bytes),
          "--memory-bytes", std::to_string(limits.memory_bytes),
          "--max-processes", std::to_string(limits.max_processes),
          "--cpu-seconds", std::to_string(limits.cpu_seconds),
          "--file-size-bytes", std::to_string(limits.file_size_bytes),
          "--open-files", std::to_string(limits.open_files),
          "--rlimit-memory", launch.rlimit_fallbacks.memory ? "1" : "0",
          "--rlimit-processes", launch.rlimit_fallbacks.processes ? "1" : "0",
          "--inotify-instances", std::to_string(launch.user_quotas.inotify_instances),
          "--inotify-watches", std::to_string(launch.user_quotas.inotify_watches),
          "--pending-signals", std::to_string(launch.user_quotas.pending_signals),
          "--max-value-bytes", std::to_string(launch.max_value_bytes),
          "--max-images", std::to_string(launch.max_images),
          // Native: the server hands each run to a spare itself (engine/zygote/protocol.h).
          "--direct-spares", launch.policy.backend == sandbox::Backend::native ? "1" : "0"};
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
  sandbox::BwrapSandbox box;
  box.bwrap_path = launch.bwrap_path;
  box.network = launch.policy.network;
  box.nested_user_namespaces = true;  // each run enters namespaces of its own
  box.python_major_minor = launch.interpreter.major_minor;
  box.data_files.push_back({data_fd, "/etc/passwd"});
  box.data_files.push_back({data_fd + 1, "/etc/group"});
  box.tmp = sandbox::Tmp::mount_point;  // each run mounts its own
  box.work_dir = sandbox::kRunWorkDir;
  box.binds.push_back({launch.zygote_path, kZygoteInside});
  for (const auto& path : binds) box.binds.push_back({path, path});
  if (!launch.env_root.empty()) box.binds.push_back({launch.env_root, kEnvInside});
  box.read_only_root = true;
  box.chdir = "/";
  box.command = {kZygoteInside};
  const auto args = zygote_arguments(launch);
  box.command.insert(box.command.end(), args.begin(), args.end());
  return sandbox::build_bwrap_argv(box);
}

// The docker backend: the zygote connects to its control socket from inside its container.
sandbox::DockerContainer docker_container(const ZygoteLaunch& launch, const std::string& control_dir) {
  static unsigned counter = 0;
  std::vector<std::string> command = {kDockerZygoteInside};
  const auto args = zygote_arguments(launch);
  command.insert(command.end(), args.begin(), args.end());
  command.insert(command.end(), {"--connect", kDockerControlSocket});
  const std::string name = "mpes-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  return zygote_container(launch.docker, launch.policy, name, launch.zygote_path, control_dir,
                          launch.env_root, kEnvInside, std::move(command), zygote_environment());
}


}  // namespace

RunNetwork plan_run_network(sandbox::Backend backend, bool network_on, const std::string& unavailable,
                            const std::optional<std::string>& pasta, const std::optional<std::string>& nft) {
  if (!network_on) return {false, "off: each run has a network namespace of its own with loopback only", {}};
  switch (backend) {
    case sandbox::Backend::none:
      return {false, "host network (--sandbox-backend none): runs are not isolated", {}};
    case sandbox::Backend::docker:
      return {false, "the zygote container's network namespace (docker's bridge), not the host's", {}};
    case sandbox::Backend::native: break;
  }
  const std::string host =
      "host network: runs share the host's network namespace (its loopback services, abstract unix "
      "sockets and /proc/net/tcp are reachable, and runs can reach each other over them) because ";
  if (!unavailable.empty()) return {false, host + unavailable, {}};
  if (!pasta) return {false, host + "pasta was not found (Debian: apt install passt)", {}};
  const std::string common =
      "user-mode (pasta): each zygote in a network namespace of its own; the host's loopback, "
      "its own addresses, abstract unix sockets and link-local/metadata addresses unreachable, the "
      "internet reachable; ";
  if (!nft) {
    return {true,
            common + "runs of one zygote share its namespace (they can reach each other over loopback) "
                     "because nft was not found (Debian: apt install nftables)",
            *pasta, false};
  }
  return {true,
          common + "each run and session in a network namespace of its own routed through its "
                   "zygote's (IPv4), unreachable from other runs",
          *pasta, true};
}

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
  } else if (launch.policy.backend == sandbox::Backend::docker) {
    cmd.argv = sandbox::build_docker_run_argv(docker_container(launch, "CONTROL_DIR"));
  } else {
    cmd.argv = {launch.zygote_path};
    const auto args = zygote_arguments(launch);
    cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  }
  cmd.env = zygote_environment();
  return cmd;
}

ZygoteProcess::ZygoteProcess(asio::io_context& io, ZygoteLaunch launch)
    : io_(io), launch_(std::move(launch)), listener_(io), control_(io), stderr_(io), pidfd_(io), kill_timer_(io) {}

ZygoteProcess::~ZygoteProcess() {
  remove_control(control_listener_);
  for (auto& out : outbox_) {
    for (int fd : out.fds) ::close(fd);
  }
  // child_ (last resort: normally stop() and the exit watch reap it) kills and reaps its group.
  if (!work_root_.empty()) {
    child_.reset();  // first: nothing of it may still be writing there
    remove_work_root(work_root_);
  }
}

void ZygoteProcess::start(std::function<void(State, const std::string&)> on_state) {
  on_state_ = std::move(on_state);
  if (!launch_.pasta_path.empty() && launch_.run_blocking) {
    // Its user-mode network first, off the event loop; the zygote is spawned inside it. A
    // failure leaves this zygote on the host's network, said in the log and in network().
    auto self = shared_from_this();
    launch_.run_blocking([self] {
      std::shared_ptr<sandbox::UserNetwork> network;
      std::string error, shared_because;
      try {
        network = std::make_shared<sandbox::UserNetwork>(sandbox::UserNetwork::start(
            self->launch_.pasta_path, self->launch_.network_agent_path, sandbox::IpFamilies::ipv4_only));
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (network && self->launch_.network_per_run) {
        try {
          network->enable_run_routing();
        } catch (const std::exception& e) {
          shared_because = e.what();
        }
      }
      asio::post(self->io_, [self, network = std::move(network), error = std::move(error),
                             shared_because = std::move(shared_because)]() mutable {
        if (self->state_ != State::starting) {  // stopped meanwhile
          self->network_ = std::move(network);
          self->release_network();
          return;
        }
        if (network) {
          self->launch_.runs_routed = network->routes_runs();
          self->network_ = std::move(network);
          if (self->launch_.runs_routed) {
            self->network_note_ = "own namespace (pasta), a namespace per run";
          } else {
            self->network_note_ = "own namespace (pasta), shared by its runs" +
                                  (shared_because.empty() ? std::string() : ": " + shared_because);
            if (!shared_because.empty()) {
              spdlog::warn("the runs of the Python {} zygote share its network namespace (they can reach each "
                           "other over loopback): {}",
                           self->launch_.interpreter.version, shared_because);
            }
          }
        } else {
          self->network_note_ = "host network: " + error;
          spdlog::warn("the Python {} zygote shares the host's network (its runs reach the host's loopback "
                       "and abstract sockets): {}",
                       self->launch_.interpreter.version, error);
        }
        self->launch_process();
      });
    });
    return;
  }
  launch_process();
}

void ZygoteProcess::release_network() {
  if (!network_) return;
  // pasta is killed and reaped off the event loop.
  if (launch_.run_blocking) {
    launch_.run_blocking([network = std::move(network_)] {});
  }
  network_.reset();
}

void ZygoteProcess::release_work_root() {
  if (work_root_.empty()) return;
  // What the runs left there may be large: removed off the event loop.
  auto remove = [root = std::exchange(work_root_, {})] { remove_work_root(root); };
  if (launch_.run_blocking) {
    launch_.run_blocking(std::move(remove));
  } else {
    remove();
  }
}

void ZygoteProcess::launch_process() {
  try {
    spawn();
  } catch (const std::exception& e) {
    child_.reset();  // started, but not watched: killed and reaped now
    release_network();
    release_work_root();
    state_ = State::failed;
    failure_ = e.what();
    auto self = shared_from_this();
    asio::post(io_, [self] {
      if (self->on_state_) self->on_state_(State::failed, self->failure_);
    });
    return;
  }
  if (listener_.is_open()) {
    wait_connection();
  } else {
    wait_control();
  }
  read_stderr();
  watch_exit();
}

void ZygoteProcess::wait_connection() {
  auto self = shared_from_this();
  listener_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const std::error_code& ec) {
    if (ec || !self->listener_.is_open() || self->state_ != State::starting) return;
    UniqueFd fd(::accept4(self->listener_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        self->wait_connection();
      }
      return;  // otherwise the zygote's exit (watch_exit) says why
    }
    // One connection, ever: nothing else can reach this zygote's control.
    self->listener_.close();
    remove_control(self->control_listener_);
    if (const std::error_code watch = adopt_fd(self->control_, fd.release())) {
      // Its exit (watch_exit) reports the start as failed, with this as its reason.
      self->stderr_tail_ += watch_failure("the zygote's control socket", watch) + "\n";
      if (self->child_) self->child_->kill();
      return;
    }
    self->wait_control();
  });
}

void ZygoteProcess::spawn() {
  const bool native = launch_.policy.backend == sandbox::Backend::native;
  const bool docker = launch_.policy.backend == sandbox::Backend::docker;
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

  // The control socket on fd 3 and, under bubblewrap, the generated passwd and group on 4 and 5;
  // stdout and stderr into one pipe, read below on the event loop.
  sandbox::ProcessSpec spec;
  spec.output = sandbox::Output::merged;
  spec.env = zygote_environment();
  spec.fds.push_back(zygote_end.get());
  std::vector<UniqueFd> data_files;
  if (native) {
    const auto binds = host_paths_to_bind(launch_);
    for (const auto& [name, data] : {std::pair<std::string, std::string>{"passwd", sandbox::minimal_passwd()},
                                     {"group", sandbox::minimal_group()}}) {
      data_files.push_back(sandbox::sealed_memfd(name.c_str(), data));
      spec.fds.push_back(data_files.back().get());
    }
    spec.argv = bwrap_argv(launch_, binds, 4);
    if (::geteuid() == 0) {
      // The zygote never holds host root; paths the unprivileged uid cannot reach are staged.
      spec.run_as = sandbox::Identity{launch_.unprivileged_uid, launch_.unprivileged_gid};
      spec.reachable_paths = {launch_.zygote_path};
      spec.reachable_paths.insert(spec.reachable_paths.end(), binds.begin(), binds.end());
      if (!launch_.env_root.empty()) spec.reachable_paths.push_back(launch_.env_root);
    }
  } else if (docker) {
    // docker's client, attached: its output is the container's; the zygote connects to the
    // listener (fd 3 of the client is unused).
    control_listener_ = listen_for_zygote(launch_.docker.runtime_dir);
    spec.argv = sandbox::build_docker_run_argv(docker_container(launch_, control_listener_.dir));
    spec.fds.clear();
    // The client's own environment (DOCKER_HOST, DOCKER_CONFIG, ...); the zygote's is --env.
    spec.env = sandbox::inherited_environment();
  } else {
    // Those of servers killed outright go first, once per server and off the event loop (each
    // server removes its own as it reaps its zygotes).
    static std::once_flag reclaimed;
    std::call_once(reclaimed, [this] {
      auto reclaim = [] { sandbox::remove_dirs_of_gone_owners("/tmp", "mpes-none-"); };
      if (launch_.run_blocking) {
        launch_.run_blocking(reclaim);
      } else {
        reclaim();
      }
    });
    try {
      work_root_ = sandbox::make_owned_dir("/tmp", "mpes-none-");
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("the unsandboxed runs' directory: ") + e.what());
    }
    spec.argv = {launch_.zygote_path};
    const auto args = zygote_arguments(launch_);
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.argv.insert(spec.argv.end(), {"--work-root", work_root_});
  }

  if (network_) {
    spec.userns_fd = network_->userns_fd();
    spec.netns_fd = network_->netns_fd();
  }
  spdlog::debug("starting zygote for Python {}: {}", launch_.interpreter.version, join(spec.argv, ' '));
  child_.emplace(sandbox::Process::spawn(spec));
  // The event loop gets its own copy of the pidfd (asio closes what it owns).
  UniqueFd pidfd(::fcntl(child_->pidfd(), F_DUPFD_CLOEXEC, 3));
  if (!pidfd) throw std::runtime_error(errno_text("dup of the zygote's pidfd", errno));
  auto watch = [](asio::posix::stream_descriptor& d, int fd, const char* what) {
    if (const std::error_code ec = adopt_fd(d, fd)) throw std::runtime_error(watch_failure(what, ec));
  };
  if (docker) {
    watch(listener_, control_listener_.fd.release(), "the zygote's control listener");
  } else {
    ::fcntl(server_end.get(), F_SETFL, O_NONBLOCK);
    watch(control_, server_end.release(), "the zygote's control socket");
  }
  watch(stderr_, child_->output().release(), "the zygote's stderr");
  watch(pidfd_, pidfd.release(), "the zygote's process");
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
    } else if (const auto* spare = std::get_if<zygote::SpareMessage>(&got.message)) {
      if (got.fds_truncated) {
        // Out of fds (EMFILE): a spare we cannot hold is dropped by the zygote, and a run waiting
        // for it is refused with this reason rather than waiting forever.
        send(zygote::SpareLinkedMessage{spare->pid, 0, kNoFdsForSpare});
      } else if (spare->direct != 0) {
        add_direct_spare(spare->pid, std::move(got.fds));
      } else {
        link_spare(*spare, got.fds.empty() ? UniqueFd() : std::move(got.fds.front()));
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
    if (ec || self->reaped()) return;
    const std::optional<int> exited = self->child_->try_wait();
    if (!exited) {  // not yet a zombie (spurious wake-up)
      self->watch_exit();
      return;
    }
    const int status = *exited;
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
      // A step before the exec that failed (staging, the identity drop) says it best.
      const std::string start_error = self->child_->start_error();
      if (!start_error.empty()) tail = start_error + (tail.empty() ? "" : "; " + tail);
      self->failure_ = "the Python " + self->launch_.interpreter.version + " zygote " + how +
                       " before it was ready" + (tail.empty() ? "" : ": " + tail);
      self->state_ = State::failed;
      self->stderr_.close();
      self->control_.close();
      self->listener_.close();
      if (self->on_state_) self->on_state_(State::failed, self->failure_);
    } else if (self->state_ == State::ready) {
      self->lose("zygote lost: it " + how);
    } else {
      self->stderr_.close();
      self->control_.close();
      self->listener_.close();
    }
    self->release_network();  // nothing of the zygote's is left in it
    self->release_work_root();
    self->notify_reaped();
  });
}

void ZygoteProcess::lose(const std::string& reason) {
  if (state_ != State::ready) return;
  state_ = State::failed;
  failure_ = reason;  // (logged by whoever handles on_state)
  direct_spares_.clear();
  control_.close();
  listener_.close();
  if (child_) child_->kill();
  auto runs = std::move(runs_);
  runs_.clear();
  for (auto& [id, callbacks] : runs) {
    if (callbacks.failed) callbacks.failed(reason);
  }
  if (on_state_) on_state_(State::failed, reason);
}

bool ZygoteProcess::run(std::uint64_t run_id, std::uint32_t timeout_seconds, std::vector<int> fds,
                        RunCallbacks callbacks, std::uint32_t flags) {
  if (state_ != State::ready) return false;
  last_used_ = std::chrono::steady_clock::now();
  if ((flags & zygote::kRunFlagSession) == 0 && hand_to_spare(run_id, timeout_seconds, fds, callbacks, flags)) {
    return true;
  }
  // Own duplicates: the caller keeps (and closes) its fds right after this call.
  Outgoing out{zygote::RunMessage{run_id, timeout_seconds, flags}, {}};
  for (int fd : fds) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (dup < 0) {
      // Out of fds (EMFILE): the run fails with that reason; nothing is sent or leaked.
      const int err = errno;
      for (int d : out.fds) ::close(d);
      if (callbacks.failed) callbacks.failed(errno_text("cannot pass the run's files to the zygote", err));
      return true;
    }
    out.fds.push_back(dup);
  }
  runs_[run_id] = std::move(callbacks);
  outbox_.push_back(std::move(out));
  flush_outbox();
  return true;
}

void ZygoteProcess::add_direct_spare(std::int32_t pid, std::vector<UniqueFd> fds) {
  if (fds.size() != 2) {
    send(zygote::SpareLinkedMessage{pid, 0, "SPARE without its pidfd and hand-off socket"});
    return;
  }
  ::fcntl(fds[1].get(), F_SETFL, O_NONBLOCK);
  const bool routed = network_ && network_->routes_runs();
  direct_spares_.push_back({pid, std::move(fds[0]), std::move(fds[1]), !routed});
  if (!routed) return;
  // Linked first (a pidfd of its own for the network thread); then it takes runs.
  UniqueFd for_link(::fcntl(direct_spares_.back().pidfd.get(), F_DUPFD_CLOEXEC, 3));
  if (!for_link) {
    // Out of fds (EMFILE): the spare is dropped, and a run waiting for it is told why.
    direct_spares_.pop_back();
    send(zygote::SpareLinkedMessage{pid, 0, kNoFdsForSpare});
    return;
  }
  link_spare(zygote::SpareMessage{pid, 1}, std::move(for_link));
}

bool ZygoteProcess::hand_to_spare(std::uint64_t run_id, std::uint32_t timeout_seconds, const std::vector<int>& fds,
                                  RunCallbacks& callbacks, std::uint32_t flags) {
  // TAKEN must reach the zygote in order, before the spare can end: only with nothing queued.
  if (!outbox_.empty() || writing_ || !control_.is_open()) return false;
  for (;;) {
    const auto ready = std::find_if(direct_spares_.begin(), direct_spares_.end(),
                                    [](const DirectSpare& s) { return s.ready; });
    if (ready == direct_spares_.end()) return false;
    DirectSpare spare = std::move(*ready);
    direct_spares_.erase(ready);
    const int err = zygote::send_message(spare.handoff.get(), zygote::RunMessage{run_id, timeout_seconds, flags}, fds);
    if (err != 0) {
      // Gone (its setup failed, or the zygote stopped it): the zygote reaps it; try the next.
      spdlog::debug("zygote[{}]: spare {} cannot take a run: {}", launch_.interpreter.major_minor, spare.pid,
                    std::strerror(err));
      continue;
    }
    RunCallbacks& placed = runs_[run_id] = std::move(callbacks);
    send(zygote::TakenMessage{run_id, spare.pid});
    if (placed.started) placed.started(spare.pid, std::move(spare.pidfd));
    return true;
  }
}

void ZygoteProcess::send(zygote::Message message, std::vector<int> fds) {
  outbox_.push_back({std::move(message), std::move(fds)});
  flush_outbox();
}

void ZygoteProcess::link_spare(const zygote::SpareMessage& spare, UniqueFd pidfd) {
  const std::int32_t pid = spare.pid;
  const bool direct = spare.direct != 0;
  if (!network_ || !network_->routes_runs() || !pidfd || !launch_.run_network_work) {
    if (direct) {
      std::erase_if(direct_spares_, [pid](const DirectSpare& s) { return s.pid == pid; });
    }
    send(zygote::SpareLinkedMessage{pid, 0, pidfd ? "this zygote's network does not route runs" : "SPARE without its pidfd"});
    return;
  }
  // On the network thread; the answer goes out on the event loop (if the zygote still lives).
  auto self = shared_from_this();
  auto job = std::make_shared<UniqueFd>(std::move(pidfd));
  launch_.run_network_work([self, network = network_, job, pid, direct] {
    std::string error;
    try {
      network->attach_run(job->get());
    } catch (const std::exception& e) {
      error = e.what();
    }
    job->reset();
    asio::post(self->io_, [self, pid, direct, error = std::move(error)] {
      if (self->state_ != State::starting && self->state_ != State::ready) return;
      if (direct) {
        const auto it = std::find_if(self->direct_spares_.begin(), self->direct_spares_.end(),
                                     [pid](const DirectSpare& s) { return s.pid == pid; });
        if (it != self->direct_spares_.end() && error.empty()) {
          it->ready = true;
          return;  // the zygote need not know: the spare is ours
        }
        if (it != self->direct_spares_.end()) self->direct_spares_.erase(it);
      }
      self->send(zygote::SpareLinkedMessage{pid, error.empty() ? 1u : 0u, error});
    });
  });
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
    const auto* sent_run = std::get_if<zygote::RunMessage>(&out.message);
    const bool is_run = sent_run != nullptr;
    const std::uint64_t id = is_run ? sent_run->run_id : 0;
    for (int fd : out.fds) ::close(fd);
    outbox_.erase(outbox_.begin());
    if (err != 0 && !is_run) {
      spdlog::warn("zygote[{}]: cannot send a control message: {}", launch_.interpreter.major_minor, std::strerror(err));
    } else if (err != 0) {
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
    direct_spares_.clear();  // their processes see EOF (and are killed with the zygote's runs)
    auto runs = std::move(runs_);
    runs_.clear();
    for (auto& [id, callbacks] : runs) {
      if (callbacks.failed) callbacks.failed("the server is shutting down");
    }
    control_.close();  // the zygote sees EOF, kills its runs, reaps them and exits
    listener_.close();
    if (!reaped()) {
      auto self = shared_from_this();
      kill_timer_.expires_after(std::chrono::seconds(1));
      kill_timer_.async_wait([self](const std::error_code& ec) {
        if (!ec && !self->reaped()) self->child_->kill();
      });
    }
  }
  if (reaped()) notify_reaped();
}

void ZygoteProcess::notify_reaped() {
  auto callbacks = std::move(on_reaped_);
  on_reaped_.clear();
  kill_timer_.cancel();
  for (auto& callback : callbacks) asio::post(io_, std::move(callback));
}

}  // namespace engine
