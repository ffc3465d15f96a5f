#include "sandbox/run_network.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <string>

#include "sandbox/memfd.h"
#include "sandbox/netlink.h"
#include "sandbox/process.h"
#include "sandbox/setup_error.h"

namespace sandbox {
namespace {

std::string ipv4(std::uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

// How many slots are tried when the next ones are still taken (a link the kernel has not yet
// removed after its run).
constexpr int kSlotAttempts = 64;

}  // namespace

RunLinkPlan run_link_plan(std::uint32_t slot) {
  constexpr std::uint32_t base = (198u << 24) | (18u << 16);  // 198.18.0.0
  slot %= kRunLinkSlots;
  const std::uint32_t net = base + slot * 4;
  return {"mr" + std::to_string(slot), kRouterLinkIndexBase + static_cast<int>(slot), ipv4(net + 1) + "/30",
          ipv4(net + 2) + "/30", ipv4(net + 1)};
}

std::string routing_ruleset(const std::string& uplink) {
  const std::string up = "\"" + uplink + "\"";
  const std::string links = "\"mr*\"";
  return "table inet mpes_runs {\n"
         "  chain prerouting {\n"
         "    type filter hook prerouting priority -150; policy accept;\n"
         // pasta sends segments conntrack cannot place; unplaced, the router would answer them
         // itself with a reset.
         "    iifname " + up + " ct state invalid drop\n"
         "  }\n"
         "  chain input {\n"
         "    type filter hook input priority 0; policy accept;\n"
         // Nothing of the router (the zygote's sockets, pasta's addresses) is a run's to reach.
         "    iifname " + links + " drop\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority 0; policy drop;\n"
         // Out to the uplink only (never to another run's link), and the replies back.
         "    iifname " + links + " oifname " + up + " meta nfproto ipv4 accept\n"
         "    iifname " + up + " oifname " + links + " ct state established,related accept\n"
         "  }\n"
         "  chain postrouting {\n"
         "    type nat hook postrouting priority 100; policy accept;\n"
         "    oifname " + up + " ip saddr " + kRunLinksPrefix + " masquerade\n"
         "  }\n"
         "}\n";
}

RunRouter RunRouter::enable(int router_netns_fd, const std::string& uplink, const std::string& nft_program) {
  NetlinkSocket router = [&] {
    try {
      NetlinkSocket socket = NetlinkSocket::open(router_netns_fd);
      // The links' range goes nowhere but to live links (their /30s are more specific): not out
      // to the internet, where a run's address would be the uplink's.
      socket.add_unreachable_route(kRunLinksPrefix);
      socket.write_sysctl("ipv4/ip_forward", "1");
      return socket;
    } catch (const NetlinkError& e) {
      throw SetupError(std::string("cannot set up forwarding for the runs' links: ") + e.what());
    }
  }();
  const UniqueFd rules = sealed_memfd("mpes-nft-rules", routing_ruleset(uplink));
  ProcessSpec nft;
  nft.argv = {nft_program, "-f", "/dev/fd/3"};
  nft.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
  nft.fds = {rules.get()};
  nft.output = Output::merged;
  nft.netns_fd = router_netns_fd;
  nft.timeout_ms = 10000;
  const ProcessResult r = run_process(nft);
  if (!r.ok()) {
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    throw SetupError("cannot load the runs' routing rules with " + nft_program + ": " +
                     (out.empty() ? r.error.empty() ? "it failed" : r.error : out));
  }
  return RunRouter(std::move(router));
}

void RunRouter::attach(int run_pidfd) {
  NetlinkSocket run = NetlinkSocket::open(run_pidfd);
  RunLinkPlan plan;
  for (int attempt = 0;; ++attempt) {
    plan = run_link_plan(next_slot_++);
    if (router_.add_veth({plan.router_name, plan.router_index, kRunLinkName, kRunLinkIndex, run.netns_fd(),
                         kRunLinkMtu})) {
      break;
    }
    // The slot's name or index is still taken (a link of a run that lives on, a session, or one
    // the kernel has not removed yet): the next slot.
    if (attempt + 1 >= kSlotAttempts) {
      throw NetlinkError("no free slot for a run's link after " + std::to_string(kSlotAttempts) + " tries (last " +
                         plan.router_name + "): names or indexes taken in the router's namespace, or " + kRunLinkName +
                         " / index " + std::to_string(kRunLinkIndex) + " in the run's");
    }
  }
  // Both ends have the indexes asked for: no lookup by name.
  const int outer = plan.router_index;
  const int inner = kRunLinkIndex;
  router_.add_address(outer, plan.router_cidr);
  run.add_address(inner, plan.run_cidr);
  run.set_up(inner);
  run.add_default_route(inner, plan.gateway);
}

}  // namespace sandbox
