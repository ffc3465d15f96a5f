// Each run's own network with --network on (native backend, pasta and nft found, server root or
// /dev/net/tun open to it): the run's clone makes a network namespace of its own (loopback only,
// as with --network off), and the network agent links it into its zygote's user-mode network
// (sandbox/user_network.h) while the run is still a spare, so nothing of this is on the run's path:
//
//   run namespace                      zygote's namespace (the router)           host
//   lo  127.0.0.1 (the run's own)
//   eth0 198.18.x.y/30  ---veth---  mrN 198.18.x.y-1/30 --route+masquerade--> uplink --pasta--> sockets
//
// The router's rules (nft, once per user-mode network, routing_ruleset): a run's packets are
// forwarded only to the uplink, with their source translated to the router's address (pasta
// serves one address), and only replies come back; nothing from a run's link is delivered to
// the router itself (the zygote's own sockets, pasta's addresses), nor forwarded to another
// run's link; packets pasta sends that the router's connection tracking finds invalid are
// dropped (else the router answers them with a reset that kills the run's connection). The
// router's closed routes (host addresses, link-local, metadata) apply to runs too, and so does
// one for the links' whole range (only live links' /30s are routed). Runs reach
// the internet over IPv4 only. A link goes with its run: the kernel removes a veth pair when the
// namespace of either end is gone.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "sandbox/netlink.h"

namespace sandbox {

// The run's end of its link, inside its namespace, and its interface index there: the first
// after loopback's (1), in a namespace that has nothing else.
inline constexpr const char* kRunLinkName = "eth0";
inline constexpr int kRunLinkIndex = 2;
// The router's end of slot N has index kRouterLinkIndexBase + N: above the few interfaces the
// router's namespace has of its own (loopback, pasta's tap), which the kernel numbers from 1.
inline constexpr int kRouterLinkIndexBase = 4096;
// Where the links' addresses come from: 198.18.0.0/15, set aside for benchmarking (RFC 2544),
// never routed on the internet, so no destination a script wants is hidden by a run's link.
inline constexpr const char* kRunLinksPrefix = "198.18.0.0/15";
inline constexpr std::uint32_t kRunLinkSlots = 32768;  // /30 subnets in that prefix
// pasta's MTU: a run's segments cross the veth pair unsplit.
inline constexpr unsigned kRunLinkMtu = 65520;

// One run's link: the router's interface and the two addresses of its /30.
struct RunLinkPlan {
  std::string router_name;   // "mr<slot>", in the router's namespace
  int router_index = 0;      // its interface index, kRouterLinkIndexBase + slot
  std::string router_cidr;   // e.g. "198.18.0.1/30"
  std::string run_cidr;      // e.g. "198.18.0.2/30"
  std::string gateway;       // the router's address, the run's default route
};
// Pure: slot (taken modulo kRunLinkSlots) -> names, index and addresses.
RunLinkPlan run_link_plan(std::uint32_t slot);

// Pure: the nft ruleset that makes a namespace whose uplink is `uplink` route runs' links.
std::string routing_ruleset(const std::string& uplink);

// Routes runs in a user-mode network's namespace. Its methods block (netlink, nft): call them off
// the event loop, from one thread at a time (it keeps one routing socket). Needs CAP_NET_ADMIN
// and CAP_SYS_ADMIN over both namespaces: used by the network agent (sandbox/network_agent.h),
// root in the router's user namespace.
class RunRouter {
 public:
  // Turns the namespace `router_netns_fd` (needed during this call only: the router keeps a
  // routing socket there) into the runs' router: IPv4 forwarding and routing_ruleset, loaded
  // with `nft_program`. Throws SetupError with the reason (nft missing or refused).
  static RunRouter enable(int router_netns_fd, const std::string& uplink, const std::string& nft_program);

  // Links the network namespace of the process `run_pidfd` names (a spare's init) into the
  // router: the veth pair, addresses, routes, links up. Throws NetlinkError (the spare died,
  // the kernel refused).
  void attach(int run_pidfd);

 private:
  explicit RunRouter(NetlinkSocket router) : router_(std::move(router)) {}
  NetlinkSocket router_;  // in the router's namespace, kept: each attach would otherwise open one there
  std::uint32_t next_slot_ = 0;
};

}  // namespace sandbox
