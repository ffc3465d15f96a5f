// The server's side of one zygote: spawns it (under bubblewrap for the native backend, as an
// unprivileged uid when the server is root; in a container of its own for the docker backend,
// engine/pool/docker_zygote.h), watches its control socket, stderr and process on
// the io_context, and dispatches runs to it. Single-threaded: every method and callback runs on
// the io_context's thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/event_loop.h"

#include "engine/interpreters/discovery.h"
#include "engine/pool/docker_zygote.h"
#include "engine/zygote/protocol.h"
#include "sandbox/policy.h"
#include "sandbox/process.h"
#include "sandbox/rlimits.h"
#include "sandbox/unique_fd.h"
#include "sandbox/user_network.h"
#include "sandbox/user_quotas.h"

namespace engine {

// How runs reach the network with --network on (and whether each zygote gets a user-mode
// network of its own, sandbox/user_network.h): native backend, pasta found, and the server root
// or /dev/net/tun open to its user.
// `description` is what check_environment and the start-up log say; `pasta` the program found
// (only when user_mode).
// `per_run`: nft found too, so each run gets a namespace of its own linked into its zygote's
// (sandbox/run_network.h); else a zygote's runs share its namespace.
struct RunNetwork {
  bool user_mode = false;
  std::string description;
  std::string pasta;
  bool per_run = false;
};
// `unavailable`: sandbox::UserNetwork::unavailable_reason() ("" when this server can start one).
RunNetwork plan_run_network(sandbox::Backend backend, bool network_on, const std::string& unavailable,
                            const std::optional<std::string>& pasta, const std::optional<std::string>& nft);

struct ZygoteLaunch {
  Interpreter interpreter;
  sandbox::Policy policy;
  std::string zygote_path;  // host path of mcp-python-exec-sandbox-zygote
  std::string bwrap_path;   // native backend
  DockerZygote docker;      // docker backend
  std::vector<std::string> preload;
  // A dependency environment (its root holds site/): mounted read-only at kEnvInside in the
  // sandbox, whatever its host path (a cache under /tmp would be hidden by each run's own /tmp),
  // and its site dir put first on sys.path.
  std::string env_root;
  sandbox::RlimitFallbacks rlimit_fallbacks;
  sandbox::UserQuotas user_quotas;  // each run's share of the host user's quotas (sandbox/user_quotas.h)
  // What a run's result channel may carry (engine/execution/result_channel.h): the runner bounds to these.
  std::size_t max_value_bytes = 102400;
  unsigned max_images = 4;
  // When the server runs as root, bubblewrap runs as this uid/gid: a root-started bwrap builds
  // its mounts in the initial user namespace, which leaves runs unable to mount their own /proc;
  // and the zygote never holds host root.
  uid_t unprivileged_uid = 65534;
  gid_t unprivileged_gid = 65534;
  // When plan_run_network says user_mode: pasta's path. The zygote (and every run and session
  // it forks) is started inside a network namespace of its own behind pasta, set up before the
  // zygote is spawned and killed once it is reaped. "" = the host's network.
  std::string pasta_path;
  std::string network_agent_path;  // with pasta_path: sandbox/network_agent.h's program
  // With pasta_path: give each run a network namespace of its own, linked into the zygote's
  // (sandbox/run_network.h), when the zygote's network can route them (nft); else its runs
  // share the zygote's namespace (said in network()).
  bool network_per_run = false;
  // Set by ZygoteProcess once its network routes runs: the zygote is told --network routed.
  bool runs_routed = false;
  // Runs blocking work (the user-mode network's start and end) off the event loop, on a thread
  // that outlives the zygote (pasta dies with that thread).
  std::function<void(std::function<void()>)> run_blocking;
  // Links each spare's network (netlink, about a millisecond) on a thread of its own, so that a
  // spare is never linked behind a slow probe.
  std::function<void(std::function<void()>)> run_network_work;
};

// The argv and environment a zygote is started with (exposed for tests and diagnostics). The
// spawned process has the control socket on fd 3 and the generated passwd/group on fds 4 and 5.
struct ZygoteCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;
};

class ZygoteProcess : public std::enable_shared_from_this<ZygoteProcess> {
 public:
  enum class State { starting, ready, failed, stopped };

  struct RunCallbacks {
    std::function<void(pid_t pid, sandbox::UniqueFd pidfd)> started;
    std::function<void(const zygote::ExitedMessage&)> exited;
    // The run never started or its result is lost (refused, zygote died): the reason.
    std::function<void(const std::string& reason)> failed;
  };

  ZygoteProcess(asio::io_context& io, ZygoteLaunch launch);
  ~ZygoteProcess();
  ZygoteProcess(const ZygoteProcess&) = delete;
  ZygoteProcess& operator=(const ZygoteProcess&) = delete;

  // Spawns the zygote. `on_state` is called when it becomes ready, when it fails to start (with
  // an actionable reason) and when it is lost later (reason "zygote lost: ...").
  void start(std::function<void(State, const std::string& reason)> on_state);
  // Sends one run. fds: as zygote::RunMessage lists them for `flags` (a run's script memfd,
  // stdout, stderr and result write ends, [files request]; a session's control socket), then
  // cgroup.procs fds. Returns false (and calls nothing) when the zygote is not ready.
  bool run(std::uint64_t run_id, std::uint32_t timeout_seconds, std::vector<int> fds,
           RunCallbacks callbacks, std::uint32_t flags = zygote::kRunFlagNone);
  // Closes the control socket (the zygote kills its runs and exits), kills the process if it
  // has not gone after a grace period; `on_reaped` (optional) runs once the process is reaped.
  void stop(std::function<void()> on_reaped = {});

  State state() const { return state_; }
  const ZygoteLaunch& launch() const { return launch_; }
  const std::string& python_version() const { return python_version_; }
  std::uint64_t rss_bytes() const { return rss_bytes_; }
  std::size_t runs_in_flight() const { return runs_.size(); }
  std::chrono::steady_clock::time_point last_used() const { return last_used_; }
  const std::string& warnings() const { return warnings_; }
  const std::string& failure() const { return failure_; }
  // With a planned user-mode network: "own namespace (pasta), a namespace per run", "own
  // namespace (pasta), shared by its runs: <why>", or why this zygote shares the host's
  // network after all (pasta failed). "" when none was planned.
  const std::string& network() const { return network_note_; }

 private:
  void spawn();
  void launch_process();
  void release_network();
  void release_work_root();
  void wait_control();
  void wait_connection();  // docker: the zygote connects to control_listener_
  void on_control();
  void read_stderr();
  void watch_exit();
  void lose(const std::string& reason);
  void flush_outbox();
  void notify_reaped();
  void link_spare(const zygote::SpareMessage& spare, sandbox::UniqueFd pidfd);
  // SPARE with direct hand-off: {pidfd, hand-off socket}; ready at once unless its network is
  // still to be linked.
  void add_direct_spare(std::int32_t pid, std::vector<sandbox::UniqueFd> fds);
  // Sends the run straight to the oldest ready spare and TAKEN to the zygote; false (callbacks
  // untouched) when there is none, and the run goes to the zygote as RUN.
  bool hand_to_spare(std::uint64_t run_id, std::uint32_t timeout_seconds, const std::vector<int>& fds,
                     RunCallbacks& callbacks, std::uint32_t flags);
  void send(zygote::Message message, std::vector<int> fds = {});

  asio::io_context& io_;
  ZygoteLaunch launch_;
  State state_ = State::starting;
  std::function<void(State, const std::string&)> on_state_;
  bool reaped() const { return !child_ || child_->reaped(); }

  std::shared_ptr<sandbox::UserNetwork> network_;  // the zygote's user-mode network, while it lives
  std::string network_note_;
  std::optional<sandbox::Process> child_;  // bwrap (native), docker's client (docker) or the zygote (none)
  ControlListener control_listener_;       // docker: until the zygote has connected
  // none: the directory its runs', rehearsal's and preloads' work dirs are made in, removed
  // with what is left in it once the zygote is reaped (a zygote killed cannot remove them).
  std::string work_root_;
  asio::posix::stream_descriptor listener_;
  asio::posix::stream_descriptor control_;
  asio::posix::stream_descriptor stderr_;
  asio::posix::stream_descriptor pidfd_;
  asio::steady_timer kill_timer_;
  std::vector<std::function<void()>> on_reaped_;
  std::string stderr_line_;
  std::string stderr_tail_;  // last lines, for a failure message
  std::string python_version_;
  std::uint64_t rss_bytes_ = 0;
  std::string warnings_;
  std::string failure_;
  std::map<std::uint64_t, RunCallbacks> runs_;
  // Spares the zygote handed us (native backend), oldest first: a run goes to one of them
  // directly, without waking the zygote on its way in.
  struct DirectSpare {
    std::int32_t pid = 0;
    sandbox::UniqueFd pidfd;
    sandbox::UniqueFd handoff;
    bool ready = false;  // routed: its network is linked
  };
  std::deque<DirectSpare> direct_spares_;
  struct Outgoing {
    zygote::Message message;
    std::vector<int> fds;  // owned until sent
  };
  std::vector<Outgoing> outbox_;
  bool writing_ = false;
  std::chrono::steady_clock::time_point last_used_ = std::chrono::steady_clock::now();
};

// What the zygote would be started with (no fds opened: fd numbers are placeholders).
ZygoteCommand describe_zygote_command(const ZygoteLaunch& launch);

const char* to_string(ZygoteProcess::State state);

}  // namespace engine
