#include "sandbox/netlink.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace sandbox {
namespace {

[[noreturn]] void fail(const std::string& what, int nl_error) {
  throw NetlinkError(what + ": " + nl_geterror(nl_error));
}

[[noreturn]] void fail_errno(const std::string& what, int err) { throw NetlinkError(what + ": " + std::strerror(err)); }

UniqueFd own_netns() {
  UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!fd) fail_errno("open /proc/thread-self/ns/net", errno);
  return fd;
}

// The calling thread in another network namespace until destroyed.
class InNamespace {
 public:
  explicit InNamespace(int netns_fd) {
    if (netns_fd < 0) return;
    home_ = own_netns();
    if (::setns(netns_fd, CLONE_NEWNET) != 0) fail_errno("enter the network namespace", errno);
  }
  ~InNamespace() {
    // Back home; a thread that cannot return must not go on working in the wrong namespace.
    if (home_ && ::setns(home_.get(), CLONE_NEWNET) != 0) std::abort();
  }
  InNamespace(const InNamespace&) = delete;
  InNamespace& operator=(const InNamespace&) = delete;

 private:
  UniqueFd home_;
};

struct NlAddr {
  nl_addr* addr = nullptr;
  NlAddr(const std::string& text, int family) {
    if (const int err = nl_addr_parse(text.c_str(), family, &addr); err < 0) fail("address " + text, err);
  }
  ~NlAddr() { nl_addr_put(addr); }
  NlAddr(const NlAddr&) = delete;
  NlAddr& operator=(const NlAddr&) = delete;
};

int family_of(const std::string& text) { return text.find(':') != std::string::npos ? AF_INET6 : AF_INET; }

}  // namespace

void NetlinkSocket::Free::operator()(nl_sock* sock) const { nl_socket_free(sock); }

NetlinkSocket NetlinkSocket::open(int netns_fd) {
  NetlinkSocket s;
  InNamespace in(netns_fd);
  s.sock_.reset(nl_socket_alloc());
  if (!s.sock_) throw NetlinkError("netlink: out of memory");
  errno = 0;
  if (const int err = nl_connect(s.sock_.get(), NETLINK_ROUTE); err < 0) {
    // libnl reports errno values it has no code for (EMFILE, ENFILE, ...) as "Unspecific
    // failure": say what the system said.
    if (errno != 0) fail_errno("netlink socket", errno);
    fail("netlink socket", err);
  }
  // libnl opens it without close-on-exec.
  ::fcntl(nl_socket_get_fd(s.sock_.get()), F_SETFD, FD_CLOEXEC);
  s.netns_ = own_netns();
  return s;
}

NetlinkSocket::~NetlinkSocket() = default;

bool NetlinkSocket::add_veth(const VethPair& pair) {
  rtnl_link* veth = rtnl_link_veth_alloc();
  if (veth == nullptr) throw NetlinkError("netlink: out of memory");
  rtnl_link* peer = rtnl_link_veth_get_peer(veth);
  rtnl_link_set_name(veth, pair.name.c_str());
  rtnl_link_set_ifindex(veth, pair.index);
  rtnl_link_set_name(peer, pair.peer_name.c_str());
  // The kernel takes the peer's index only when this end's is given too.
  rtnl_link_set_ifindex(peer, pair.peer_index);
  rtnl_link_set_ns_fd(peer, pair.peer_netns_fd);
  for (rtnl_link* end : {veth, peer}) {
    rtnl_link_set_mtu(end, pair.mtu);
    // One queue each way: a veth otherwise gets one per possible CPU, each a set of sysfs
    // objects the kernel makes now and removes with the namespace.
    rtnl_link_set_num_tx_queues(end, 1);
    rtnl_link_set_num_rx_queues(end, 1);
  }
  // This end up from the start (no second request for it); the kernel cannot open the peer
  // before this end exists (ENOTCONN), so the peer is brought up by set_up().
  rtnl_link_set_flags(veth, IFF_UP);
  rtnl_link_put(peer);
  const int err = rtnl_link_add(sock_.get(), veth, NLM_F_CREATE | NLM_F_EXCL);
  rtnl_link_put(veth);
  // A taken name is EEXIST, a taken index EBUSY.
  if (err == -NLE_EXIST || err == -NLE_BUSY) return false;
  if (err < 0) fail("create the veth pair " + pair.name, err);
  return true;
}

void NetlinkSocket::set_up(int ifindex) {
  rtnl_link* change = rtnl_link_alloc();
  rtnl_link* original = rtnl_link_alloc();
  rtnl_link_set_ifindex(original, ifindex);
  rtnl_link_set_flags(change, IFF_UP);
  const int err = rtnl_link_change(sock_.get(), original, change, 0);
  rtnl_link_put(change);
  rtnl_link_put(original);
  if (err < 0) fail("bring interface " + std::to_string(ifindex) + " up", err);
}

void NetlinkSocket::add_address(int ifindex, const std::string& cidr) {
  NlAddr local(cidr, family_of(cidr));
  rtnl_addr* addr = rtnl_addr_alloc();
  rtnl_addr_set_ifindex(addr, ifindex);
  rtnl_addr_set_local(addr, local.addr);
  const int err = rtnl_addr_add(sock_.get(), addr, 0);
  rtnl_addr_put(addr);
  if (err < 0) fail("add address " + cidr, err);
}

void NetlinkSocket::add_default_route(int ifindex, const std::string& gateway) {
  NlAddr dst("0.0.0.0/0", AF_INET);
  NlAddr via(gateway, AF_INET);
  rtnl_route* route = rtnl_route_alloc();
  rtnl_route_set_family(route, AF_INET);
  rtnl_route_set_dst(route, dst.addr);
  rtnl_nexthop* hop = rtnl_route_nh_alloc();
  rtnl_route_nh_set_ifindex(hop, ifindex);
  rtnl_route_nh_set_gateway(hop, via.addr);
  rtnl_route_add_nexthop(route, hop);  // the route owns it now
  const int err = rtnl_route_add(sock_.get(), route, NLM_F_CREATE);
  rtnl_route_put(route);
  if (err < 0) fail("add the default route via " + gateway, err);
}

void NetlinkSocket::add_unreachable_route(const std::string& prefix) {
  const int family = family_of(prefix);
  NlAddr dst(prefix, family);
  rtnl_route* route = rtnl_route_alloc();
  rtnl_route_set_family(route, static_cast<std::uint8_t>(family));
  rtnl_route_set_dst(route, dst.addr);
  rtnl_route_set_type(route, RTN_UNREACHABLE);
  rtnl_route_set_table(route, RT_TABLE_MAIN);
  rtnl_route_set_protocol(route, RTPROT_STATIC);
  rtnl_route_set_scope(route, RT_SCOPE_UNIVERSE);
  const int err = rtnl_route_add(sock_.get(), route, NLM_F_CREATE | NLM_F_REPLACE);
  rtnl_route_put(route);
  if (err < 0) fail("close the route to " + prefix, err);
}

void NetlinkSocket::write_sysctl(const std::string& key, const std::string& value) {
  // /proc/sys/net shows the namespace of the thread that opens it.
  InNamespace in(netns_.get());
  const std::string path = "/proc/sys/net/" + key;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) fail_errno("open " + path, errno);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    fail_errno("write " + path, errno);
  }
}

}  // namespace sandbox
