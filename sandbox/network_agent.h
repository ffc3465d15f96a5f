// The network agent: the one process that changes a user-mode network's namespaces (its closed
// routes, the runs' router, each run's link; sandbox/user_network.h, sandbox/run_network.h).
//
// It runs inside the network it changes, joined there by the process runner (ProcessSpec::
// userns_fd, netns_fd), as the root of the namespace's owner: the real root when the server runs
// as root; otherwise the root of the user namespace pasta made for the network, which only a
// single-threaded process can join (the server has several threads). So the same netlink and nft
// calls serve a server with root and one without, and the server itself never changes namespace.
//
// Protocol: a SOCK_SEQPACKET socketpair (fd 3 in the agent), one request per message, each
// answered before the next is read:
//
//   close <prefix>   routes nothing to <prefix> in the agent's namespace
//   route <nft>      makes the namespace the runs' router (RunRouter::enable, nft at that path)
//   attach           + a pidfd (SCM_RIGHTS): links that process's namespace into the router
//
//   ok | error <why>
//
// The agent ends when the socket closes (its client is gone), or with the process group the
// client's Process kills.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/process.h"
#include "sandbox/unique_fd.h"

namespace sandbox {

struct AgentRequest {
  enum class Op { close, route, attach } op;
  std::string argument;  // the prefix, or nft's path; "" for attach
};
// Pure: a request as sent; nullopt when it is not one (unknown word, a missing argument, an
// argument for attach).
std::optional<AgentRequest> parse_agent_request(std::string_view text);
std::string format_agent_request(const AgentRequest& request);

// The server's side: one agent, started inside a network, asked one request at a time (from
// any thread: the requests are serialised). Every call blocks until the answer (at most
// `answer_timeout_ms`): call them off the event loop.
class NetworkAgent {
 public:
  // Starts `program` (mcp-python-exec-sandbox-network) inside the namespace `netns_fd`, joining
  // `userns_fd` first (-1: stays in the server's user namespace, the server being root there).
  // Throws SpawnError.
  static NetworkAgent start(const std::string& program, int userns_fd, int netns_fd, KillSwitch* kill_switch);

  NetworkAgent(NetworkAgent&&) noexcept = default;
  NetworkAgent& operator=(NetworkAgent&&) noexcept = default;

  // Throws NetlinkError with the agent's reason.
  void close_route(const std::string& prefix);
  // Throws SetupError with the agent's reason.
  void route_runs(const std::string& nft_program);
  // Throws NetlinkError with the agent's reason.
  void attach_run(int run_pidfd);

  pid_t pid() const { return process_.pid(); }

  static constexpr int answer_timeout_ms = 15000;

 private:
  NetworkAgent(Process process, UniqueFd channel)
      : process_(std::move(process)), channel_(std::move(channel)), mutex_(std::make_unique<std::mutex>()) {}
  // The answer's reason ("" for ok). Throws NetlinkError when the agent does not answer.
  std::string ask(const AgentRequest& request, int fd = -1);
  Process process_;
  UniqueFd channel_;
  std::unique_ptr<std::mutex> mutex_;
};

// The agent's side: serves requests on `channel` until it closes (0), in the calling process's
// namespaces. Returns the exit status for main.
int serve_network_agent(int channel);

}  // namespace sandbox
