// Each run's own network: the link plan (names and /30s), the router's rules, the prefixes a
// user-mode network closes, and (as root, with pasta and nft) two linked namespaces that each have
// their own address and default route but reach neither each other nor the router itself.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/namespaces.h"
#include "sandbox/run_network.h"
#include "sandbox/unique_fd.h"
#include "sandbox/user_network.h"

namespace {

// The network agent, built beside the tests.
std::string agent_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mcp-python-exec-sandbox-network").string();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A process in a network namespace of its own that, once told to go, runs python3 with `code`
// (stdout captured; what follows the go byte is its stdin). Made in the user namespace
// `userns_fd` (a user-mode network's, when the test is not root), as a zygote's runs are.
struct NamespacedPython {
  pid_t pid = -1;
  sandbox::UniqueFd pidfd;
  sandbox::UniqueFd go;   // write a byte: exec python3
  sandbox::UniqueFd out;  // its stdout

  explicit NamespacedPython(const std::string& code, int userns_fd = -1) {
    int ready[2], go_pipe[2], out_pipe[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(go_pipe, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (userns_fd >= 0 && ::setns(userns_fd, CLONE_NEWUSER) != 0) ::_exit(94);
      if (::unshare(CLONE_NEWNET) != 0) ::_exit(90);
      try {
        sandbox::bring_up_loopback();  // as a run's init does
      } catch (...) {
        ::_exit(93);
      }
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1 || ::read(go_pipe[0], &c, 1) != 1) ::_exit(91);
      ::dup2(go_pipe[0], 0);
      ::dup2(out_pipe[1], 1);
      ::execl("/usr/bin/python3", "python3", "-I", "-c", code.c_str(), static_cast<char*>(nullptr));
      ::_exit(92);
    }
    ::close(ready[1]);
    ::close(go_pipe[0]);
    ::close(out_pipe[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    go.reset(go_pipe[1]);
    out.reset(out_pipe[0]);
    pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    REQUIRE(pidfd);
  }
  void start(const std::string& input = "") {
    const std::string bytes = "g" + input;
    REQUIRE(::write(go.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    go.reset();
  }
  std::string line() {
    std::string text;
    char c;
    while (::read(out.get(), &c, 1) == 1 && c != '\n') text += c;
    return text;
  }
  std::string finish() {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(out.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return text;
  }
  ~NamespacedPython() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

TEST_CASE("each slot is its own /30 in 198.18.0.0/15, named mr<slot>", "[run_network]") {
  const auto first = sandbox::run_link_plan(0);
  CHECK(first.router_name == "mr0");
  CHECK(first.router_index == sandbox::kRouterLinkIndexBase);
  CHECK(first.router_cidr == "198.18.0.1/30");
  CHECK(first.run_cidr == "198.18.0.2/30");
  CHECK(first.gateway == "198.18.0.1");
  const auto second = sandbox::run_link_plan(1);
  CHECK(second.router_cidr == "198.18.0.5/30");
  CHECK(second.run_cidr == "198.18.0.6/30");
  const auto last = sandbox::run_link_plan(sandbox::kRunLinkSlots - 1);
  CHECK(last.router_name == "mr32767");
  CHECK(last.router_index == sandbox::kRouterLinkIndexBase + 32767);
  CHECK(last.router_cidr == "198.19.255.253/30");
  CHECK(last.run_cidr == "198.19.255.254/30");
  // Wraps around; an interface name always fits IFNAMSIZ (15 characters).
  CHECK(sandbox::run_link_plan(sandbox::kRunLinkSlots).router_cidr == first.router_cidr);
  CHECK(sandbox::run_link_plan(sandbox::kRunLinkSlots).router_index == first.router_index);
  std::set<std::string> seen;
  for (std::uint32_t slot = 0; slot < 2000; ++slot) {
    const auto plan = sandbox::run_link_plan(slot * 16 + 3);
    CHECK(plan.router_name.size() <= 15);
    seen.insert(plan.run_cidr);
  }
  CHECK(seen.size() == 2000);
}

TEST_CASE("the router forwards runs only to its uplink, translated, and delivers nothing of theirs to itself",
          "[run_network]") {
  const std::string rules = sandbox::routing_ruleset("uplink");
  CHECK(contains(rules, "iifname \"uplink\" ct state invalid drop"));
  CHECK(contains(rules, "type filter hook input priority 0; policy accept;\n    iifname \"mr*\" drop"));
  CHECK(contains(rules, "type filter hook forward priority 0; policy drop;"));
  CHECK(contains(rules, "iifname \"mr*\" oifname \"uplink\" meta nfproto ipv4 accept"));
  CHECK(contains(rules, "iifname \"uplink\" oifname \"mr*\" ct state established,related accept"));
  CHECK(contains(rules, "oifname \"uplink\" ip saddr 198.18.0.0/15 masquerade"));
  // Nothing accepted from one run's link to another's.
  CHECK_FALSE(contains(rules, "iifname \"mr*\" oifname \"mr*\""));
}

TEST_CASE("a user-mode network closes metadata and the host's own addresses, not loopback or link-local",
          "[user_network]") {
  const auto closed = sandbox::closed_prefixes(
      {"127.0.0.1", "::1", "fe80::1", "169.254.3.4", "192.0.2.2", "172.17.0.1", "fd00::2", "192.0.2.2", "bogus"});
  auto has = [&](const std::string& p) { return std::find(closed.begin(), closed.end(), p) != closed.end(); };
  CHECK(has("169.254.0.0/16"));
  CHECK(has("100.100.100.200/32"));
  CHECK(has("fd00:ec2::254/128"));
  CHECK(has("192.0.2.2/32"));
  CHECK(has("172.17.0.1/32"));
  CHECK(has("fd00::2/128"));
  CHECK_FALSE(has("127.0.0.1/32"));
  CHECK_FALSE(has("::1/128"));
  CHECK_FALSE(has("fe80::1/128"));
  CHECK_FALSE(has("169.254.3.4/32"));  // inside the closed link-local range already
  CHECK(std::count(closed.begin(), closed.end(), "192.0.2.2/32") == 1);
  CHECK(closed.size() == 6);
}

TEST_CASE("linked runs each have an address, a default route and one queue each way, and reach neither each other "
          "nor the router",
          "[run_network]") {
  const auto pasta = sandbox::UserNetwork::find_pasta();
  if (!pasta || !sandbox::UserNetwork::find_nft() || !sandbox::UserNetwork::unavailable_reason().empty()) {
    WARN("skipped: needs pasta and nft (apt install passt nftables), and root or /dev/net/tun open to this user");
    return;
  }
  auto network = sandbox::UserNetwork::start(*pasta, agent_path(), sandbox::IpFamilies::ipv4_only);
  network.enable_run_routing();
  REQUIRE(network.routes_runs());

  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  // A: listens on all its addresses; its own address reaches it (the control).
  NamespacedPython a(
      "import socket, time\n"
      "t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
      "t.bind(('0.0.0.0', " + std::to_string(port) + ")); t.listen(8)\n"
      "import fcntl, struct\n"
      "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "ip = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack('256s', b'eth0'))[20:24])\n"
      "socket.create_connection((ip, " + std::to_string(port) + "), timeout=2).close()\n"
      "t.accept()[0].close()\n"
      "print('own', ip, flush=True)\n"
      "t.settimeout(6)\n"
      "try:\n"
      "    t.accept(); print('accepted')\n"
      "except OSError: print('nobody')\n",
      network.userns_fd());
  // B: tries A's address, then its gateway (the router itself).
  NamespacedPython b(
      "import socket, sys, time\n"
      "routes = open('/proc/net/route').read()\n"
      "print('default' if any(l.split()[1] == '00000000' for l in routes.splitlines()[1:]) else 'no-default')\n"
      "def attempt(host, port):\n"
      "    try:\n"
      "        socket.create_connection((host, port), timeout=2).close(); return 'reached'\n"
      "    except OSError as e: return 'refused' if e.errno == 111 else 'failed'\n"
      "peer = sys.stdin.readline().strip()\n"
      "gw = [l.split() for l in routes.splitlines()[1:] if l.split()[1] == '00000000'][0][2]\n"
      "gateway = socket.inet_ntoa(bytes.fromhex(gw)[::-1])\n"
      "print('peer', attempt(peer, " + std::to_string(port) + "))\n"
      "print('gateway', attempt(gateway, 22))\n"
      // Its link's queues, asked of the kernel (RTM_GETLINK for eth0): IFLA_NUM_TX_QUEUES (31)
      // and IFLA_NUM_RX_QUEUES (32).
      "import struct\n"
      "nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n"
      "name = b'eth0\\0' + b'\\0' * 3\n"
      "body = struct.pack('BxHiII', 0, 0, 0, 0, 0) + struct.pack('HH', 9, 3) + name\n"
      "nl.send(struct.pack('IHHII', 16 + len(body), 18, 1, 1, 0) + body)\n"
      "data, i, found = nl.recv(65536), 32, {}\n"
      "while i + 4 <= len(data):\n"
      "    n, kind = struct.unpack_from('HH', data, i)\n"
      "    if n < 4: break\n"
      "    if kind in (31, 32): found[kind] = struct.unpack_from('I', data, i + 4)[0]\n"
      "    i += (n + 3) & ~3\n"
      "print('queues', found.get(31), found.get(32))\n",
      network.userns_fd());
  network.attach_run(a.pidfd.get());
  network.attach_run(b.pidfd.get());
  a.start();
  const std::string first = a.line();
  REQUIRE(first.rfind("own 198.1", 0) == 0);  // its own address (in 198.18.0.0/15) reaches it
  b.start(first.substr(4) + "\n");
  const std::string b_out = b.finish();
  const std::string a_out = a.finish();
  INFO("A: " << a_out << "\nB: " << b_out);
  CHECK(contains(b_out, "default"));
  CHECK_FALSE(contains(b_out, "no-default"));
  CHECK(contains(b_out, "peer failed"));
  CHECK(contains(b_out, "gateway failed"));
  // One queue each way, whatever the number of CPUs (a veth's default is one per possible CPU).
  CHECK(contains(b_out, "queues 1 1"));
  CHECK(contains(a_out, "nobody"));
}
