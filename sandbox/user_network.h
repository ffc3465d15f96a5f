// A user-mode network for one sandbox: a fresh network namespace whose only way out is Debian's
// pasta (passt), a user-space TCP/UDP stack that makes the namespace's connections from the
// host as ordinary sockets. Inside, 127.0.0.1 and abstract unix sockets are the namespace's own
// (the host's are unreachable), pasta forwards no port in either direction (-t/-u/-T/-U none)
// and does not map its gateway address to the host's loopback (--no-map-gw); link-local and
// cloud metadata addresses, and every address of the host's own interfaces when it starts
// (reachable through pasta's sockets otherwise: a service of the host bound to 0.0.0.0 would
// answer on docker0's 172.17.0.1 or a second interface), are routed nowhere (closed_prefixes).
// The internet is reachable. pasta's interface in the namespace is named kUplinkName.
//
// A zygote's network can also route runs (enable_run_routing): each run then has a namespace of
// its own linked into this one (sandbox/run_network.h) instead of sharing it.
//
// Started through the one process runner (sandbox/process.h), as pid 1 of a pid namespace of
// its own (unshare) so that nothing it starts outlives it: pasta runs `sh` as a holder of
// the namespace; once the holder says it is ready (pasta configured the interface first), the
// namespace is opened by fd and handed to whatever joins it (ProcessSpec::netns_fd). Destroying
// the object kills pasta and the holder; so does the end of the server (or of the thread that
// started it). Every change to the namespace after pasta's (closed routes, the runs' router and
// links) is made by the network agent (sandbox/network_agent.h), started inside it.
//
// As root, pasta keeps root until its tap device is open, and what joins the namespace needs no
// more. Without root (where /dev/net/tun is open to the server's user, udev's default mode
// 0666), unshare makes a user namespace that maps the server's user to itself, in which pasta
// makes the user namespace that owns the network and maps that user to its root; what joins the
// network joins that user namespace first (userns_fd(), ProcessSpec::userns_fd) and is its root
// there, the server's user outside.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sandbox/network_agent.h"
#include "sandbox/process.h"
#include "sandbox/unique_fd.h"

namespace sandbox {

// pasta's interface inside the namespace.
inline constexpr const char* kUplinkName = "uplink";

// Pure: the prefixes a user-mode network routes nowhere, given the host's interface addresses
// (as text): link-local and metadata addresses, and each host address that is neither loopback
// nor IPv6 link-local, as a /32 or /128.
std::vector<std::string> closed_prefixes(const std::vector<std::string>& host_addresses);
// The host's interface addresses now (getifaddrs), as text.
std::vector<std::string> host_addresses();

// Which address families pasta carries. A zygote's network carries only IPv4, as its runs' links
// do (their router translates IPv4 alone): pasta then neither configures IPv6 in the namespace
// nor fills the IPv6 half of its packet buffers (9.4 MiB less resident, Debian's passt of 2023).
// An installer's network carries both (an index may answer on IPv6 only).
enum class IpFamilies { ipv4_only, both };

class UserNetwork {
 public:
  // pasta on PATH (or at `path`), or nullopt.
  static std::optional<std::string> find_pasta(const std::string& path = "pasta");
  // nft on PATH, or in /usr/sbin or /sbin (root's PATH may lack them), or nullopt.
  static std::optional<std::string> find_nft();
  // Why a user-mode network cannot be started by this process, or "" when it can: root, or
  // /dev/net/tun open to its user for reading and writing.
  static std::string unavailable_reason();
  // Pure: the same from the facts (`tun_state`: what /dev/net/tun is, for the reason).
  static std::string unavailable_reason_for(bool root, bool tun_open, const std::string& tun_state);
  // Starts pasta and its namespace, and the network agent (`agent_program`) inside it, ready for
  // use when it returns. Blocks (pasta's start, then its routes): call it off the event loop, on
  // a thread that outlives the object (pasta is killed when that thread ends). Throws SpawnError
  // (pasta or the agent missing or failing, not ready within `ready_timeout_ms`).
  static UserNetwork start(const std::string& pasta_program, const std::string& agent_program,
                           IpFamilies families, int ready_timeout_ms = 10000);

  UserNetwork(UserNetwork&&) noexcept = default;
  UserNetwork& operator=(UserNetwork&&) noexcept = default;
  ~UserNetwork();

  int netns_fd() const { return netns_.get(); }
  // The user namespace to join first (ProcessSpec::userns_fd) when the server is not root; else -1.
  int userns_fd() const { return userns_.get(); }

  // Makes this namespace the router of runs' own namespaces (sandbox/run_network.h), with nft
  // found on PATH (or in /usr/sbin). Blocks. Throws SetupError (no nft, rules refused).
  void enable_run_routing();
  bool routes_runs() const { return routes_runs_; }
  // Links the namespace of a spare's init (pidfd) into this one. Blocks (the agent's netlink,
  // ~1 ms); call it on a worker thread. Throws NetlinkError. Only after enable_run_routing().
  void attach_run(int run_pidfd);
  // The process started: util-linux's unshare, parent of pasta (pid 1 of its pid namespace).
  pid_t pid() const { return pasta_.pid(); }

 private:
  explicit UserNetwork(Process pasta) : pasta_(std::move(pasta)) {}
  Process pasta_;
  UniqueFd holder_;  // pidfd of the holder (pid 1 of pasta's pid namespace)
  UniqueFd netns_;   // its network namespace
  UniqueFd userns_;  // its user namespace, when the server is not root
  std::optional<NetworkAgent> agent_;
  bool routes_runs_ = false;
};

// Kills every user-mode network's pasta and holder (their process groups) now, and any started
// later: for a server that exits without destroying its objects (std::_Exit), whose pasta may be
// half-started (pasta's child, not yet the holder, would wait forever for its dead parent).
void kill_user_networks();

// Pure: the pasta command line that starts a namespace with `holder` as its first process, for a
// server with root (`root`) or without, carrying `families`.
std::vector<std::string> pasta_argv(const std::string& pasta_program, const std::vector<std::string>& holder,
                                    bool root, IpFamilies families);
// Pure: the whole command that starts it: util-linux's unshare, making pasta pid 1 of a pid
// namespace of its own (without root, in a user namespace mapping the user to itself), then
// pasta_argv.
std::vector<std::string> user_network_argv(const std::string& pasta_program, const std::vector<std::string>& holder,
                                           bool root, IpFamilies families);

}  // namespace sandbox
