// The routing socket's veth pair (as root): each end gets the index asked for, and a taken name
// or index on either end is told apart from other refusals.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "sandbox/netlink.h"
#include "sandbox/unique_fd.h"

namespace {

// Two fresh network namespaces (loopback only), made on a thread of their own so that this
// thread stays in its namespace.
struct TwoNamespaces {
  sandbox::UniqueFd here, there;
  TwoNamespaces() {
    std::thread([this] {
      auto fresh = [] {
        if (::unshare(CLONE_NEWNET) != 0) return sandbox::UniqueFd();
        return sandbox::UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
      };
      here = fresh();
      there = fresh();
    }).join();
  }
};

// The name of interface `index` in the namespace `netns_fd`, asked from a thread there.
std::string name_in(int netns_fd, int index) {
  std::string name;
  std::thread([&] {
    char buf[IF_NAMESIZE] = {};
    if (::setns(netns_fd, CLONE_NEWNET) == 0 && ::if_indextoname(static_cast<unsigned>(index), buf) != nullptr) {
      name = buf;
    }
  }).join();
  return name;
}

}  // namespace

TEST_CASE("a veth pair gets the indexes asked for, and a taken name or index is not an error", "[netlink]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root (two network namespaces)");
    return;
  }
  TwoNamespaces ns;
  REQUIRE(ns.here);
  REQUIRE(ns.there);
  auto socket = sandbox::NetlinkSocket::open(ns.here.get());
  using Pair = sandbox::NetlinkSocket::VethPair;

  CHECK(socket.add_veth(Pair{"mr0", 4096, "eth0", 2, ns.there.get(), 1500}));
  CHECK(name_in(ns.here.get(), 4096) == "mr0");
  CHECK(name_in(ns.there.get(), 2) == "eth0");
  // The addresses go on by index: nothing had to look the interfaces up.
  socket.add_address(4096, "198.18.0.1/30");

  // This end's name taken; its index taken; the peer's name taken; the peer's index taken.
  CHECK_FALSE(socket.add_veth(Pair{"mr0", 4097, "eth1", 3, ns.there.get(), 1500}));
  CHECK_FALSE(socket.add_veth(Pair{"mr1", 4096, "eth1", 3, ns.there.get(), 1500}));
  CHECK_FALSE(socket.add_veth(Pair{"mr1", 4097, "eth0", 3, ns.there.get(), 1500}));
  CHECK_FALSE(socket.add_veth(Pair{"mr1", 4097, "eth1", 2, ns.there.get(), 1500}));
  // Nothing half made by the refusals: the next free slot is whole.
  CHECK(name_in(ns.here.get(), 4097).empty());
  CHECK(socket.add_veth(Pair{"mr1", 4097, "eth1", 3, ns.there.get(), 1500}));
  CHECK(name_in(ns.there.get(), 3) == "eth1");

  // Any other refusal is an error that says what was asked.
  try {
    socket.add_veth(Pair{"mr2", 4098, "eth2", 4, ns.there.get(), 100000000});
    FAIL("an impossible MTU was accepted");
  } catch (const sandbox::NetlinkError& e) {
    CHECK(std::string(e.what()).find("create the veth pair mr2") != std::string::npos);
  }
}
