// The few routing-socket (rtnetlink) operations the network layers need, through libnl-route:
// links, addresses, routes, in a network namespace chosen per socket. Used by
// sandbox/user_network.h (a user-mode network's closed routes and forwarding) and
// sandbox/run_network.h (each run's link into it); nothing here decides a policy.
//
// A socket is bound to the network namespace its opening thread was in. NetnsSocket opens one in
// another namespace by switching the calling thread there and back (setns of CLONE_NEWNET is per
// thread, and allowed in a multi-threaded process): call it on a worker thread, never on the
// event loop. It needs CAP_SYS_ADMIN over the target namespace and in its own user namespace:
// the network agent (sandbox/network_agent.h), root there.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "sandbox/unique_fd.h"

struct nl_sock;

namespace sandbox {

// Thrown with the operation, its subject and the kernel's reason.
struct NetlinkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class NetlinkSocket {
 public:
  // A routing socket in the namespace `netns_fd` names: an nsfs fd (/proc/PID/ns/net) or a pidfd
  // (the namespace of that process). -1: the calling thread's own. Throws NetlinkError.
  static NetlinkSocket open(int netns_fd = -1);

  NetlinkSocket(NetlinkSocket&&) noexcept = default;
  NetlinkSocket& operator=(NetlinkSocket&&) noexcept = default;
  ~NetlinkSocket();

  // An nsfs fd of the namespace this socket is in (for moving a link into it).
  int netns_fd() const { return netns_.get(); }

  // A veth pair: `pair.name` here, up, and `pair.peer_name` in the namespace `pair.peer_netns_fd`
  // (nsfs), down; each end with the interface index asked for (so nobody has to look it up
  // afterwards), `pair.mtu` and one queue each way. False when a name or an index is taken, in
  // either namespace; throws NetlinkError for any other refusal.
  struct VethPair {
    std::string name;
    int index = 0;
    std::string peer_name;
    int peer_index = 0;
    int peer_netns_fd = -1;
    unsigned mtu = 1500;
  };
  bool add_veth(const VethPair& pair);
  void set_up(int ifindex);
  // "a.b.c.d/len" or an IPv6 prefix on that interface.
  void add_address(int ifindex, const std::string& cidr);
  // The default IPv4 route through `gateway` on that interface.
  void add_default_route(int ifindex, const std::string& gateway);
  // Nothing routed to `prefix` ("a.b.c.d/len" or IPv6): connecting gets EHOSTUNREACH / ENETUNREACH.
  void add_unreachable_route(const std::string& prefix);
  // /proc/sys/net/... of this socket's namespace, e.g. "ipv4/ip_forward".
  void write_sysctl(const std::string& key, const std::string& value);

 private:
  struct Free {
    void operator()(nl_sock* sock) const;
  };
  NetlinkSocket() = default;
  std::unique_ptr<nl_sock, Free> sock_;
  UniqueFd netns_;
};

}  // namespace sandbox
