// The user-mode network: pasta's command line forwards nothing either way, and (as root, with
// pasta installed) a process joined to the namespace is in another network namespace, cannot
// reach a listener on the host's 127.0.0.1 and has no route to link-local addresses.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/process.h"
#include "sandbox/unique_fd.h"
#include "sandbox/user_network.h"

namespace {

// The network agent, built beside the tests.
std::string agent_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mcp-python-exec-sandbox-network").string();
}

// pasta, when this process can start a user-mode network; else nullopt, with a warning.
std::optional<std::string> usable_pasta() {
  auto pasta = sandbox::UserNetwork::find_pasta();
  if (pasta && sandbox::UserNetwork::unavailable_reason().empty()) return pasta;
  WARN("skipped: needs pasta (apt install passt), and root or /dev/net/tun open to this user");
  return std::nullopt;
}

// Runs `argv` inside `network` (its user namespace first, when the server is not root).
sandbox::ProcessResult run_inside(const sandbox::UserNetwork& network, std::vector<std::string> argv) {
  sandbox::ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.userns_fd = network.userns_fd();
  spec.netns_fd = network.netns_fd();
  spec.timeout_ms = 20000;
  return sandbox::run_process(spec);
}

long find_seq(const std::vector<std::string>& argv, const std::vector<std::string>& items) {
  for (std::size_t i = 0; i + items.size() <= argv.size(); ++i) {
    if (std::equal(items.begin(), items.end(), argv.begin() + static_cast<long>(i))) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("pasta forwards no port either way and maps no gateway to the host", "[user_network]") {
  const auto argv = sandbox::pasta_argv("/usr/bin/pasta", {"/bin/sh", "-c", "x"}, true, sandbox::IpFamilies::both);
  for (const char* flag : {"-t", "-u", "-T", "-U"}) CHECK(find_seq(argv, {flag, "none"}) >= 0);
  CHECK(find_seq(argv, {"--no-map-gw"}) >= 0);
  CHECK(find_seq(argv, {"--config-net"}) >= 0);
  const long dash = find_seq(argv, {"--"});
  REQUIRE(dash >= 0);
  CHECK(std::vector<std::string>(argv.begin() + dash + 1, argv.end()) ==
        std::vector<std::string>{"/bin/sh", "-c", "x"});
}

TEST_CASE("pasta carries IPv6 only when asked to", "[user_network]") {
  const std::vector<std::string> holder = {"/bin/sh", "-c", "x"};
  const auto both = sandbox::pasta_argv("/usr/bin/pasta", holder, false, sandbox::IpFamilies::both);
  const auto v4 = sandbox::pasta_argv("/usr/bin/pasta", holder, false, sandbox::IpFamilies::ipv4_only);
  CHECK(find_seq(both, {"--ipv4-only"}) < 0);
  const long flag = find_seq(v4, {"--ipv4-only"});
  CHECK(flag >= 0);
  CHECK(flag < find_seq(v4, {"--"}));  // pasta's option, not the holder's
}

TEST_CASE("a process in the user-mode network reaches neither the host loopback nor link-local",
          "[user_network]") {
  const auto pasta = usable_pasta();
  if (!pasta) return;
  // A listener on the host's loopback.
  sandbox::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener.get(), 4) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));

  auto network = sandbox::UserNetwork::start(*pasta, agent_path(), sandbox::IpFamilies::ipv4_only);
  const auto r = run_inside(network, {"/usr/bin/python3", "-I", "-c",
                                      "import os, socket, sys\n"
                                      "print(os.readlink('/proc/self/ns/net'))\n"
                                      "for host, port in (('127.0.0.1', int(sys.argv[1])), ('169.254.169.254', 80)):\n"
                                      "    try:\n"
                                      "        socket.create_connection((host, port), timeout=3); print('reached')\n"
                                      "    except OSError as e: print(e.errno)\n",
                                      port});
  REQUIRE(r.ok());
  const std::string own = std::filesystem::read_symlink("/proc/self/ns/net").string();
  CHECK(r.out.find(own) == std::string::npos);
  CHECK(r.out.find("reached") == std::string::npos);
  CHECK(r.out.find("111") != std::string::npos);  // ECONNREFUSED: nothing listens there
}

namespace {

// The IPv6 addresses of the uplink inside `network` that are not link-local (/proc/net/if_inet6:
// address, index, prefix length, scope, flags, name).
std::vector<std::string> uplink_ipv6(const sandbox::UserNetwork& network) {
  const auto r = run_inside(network, {"/bin/cat", "/proc/net/if_inet6"});
  REQUIRE(r.ok());
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  std::string address, index, length, scope, flags, name;
  while (lines >> address >> index >> length >> scope >> flags >> name) {
    if (name == sandbox::kUplinkName && address.rfind("fe80", 0) != 0) out.push_back(address);
  }
  return out;
}

bool host_has_global_ipv6() {
  for (const std::string& a : sandbox::host_addresses()) {
    if (a.find(':') != std::string::npos && a != "::1" && a.rfind("fe80", 0) != 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("an IPv4-only user-mode network has no IPv6 address; one for both families has the host's",
          "[user_network]") {
  const auto pasta = usable_pasta();
  if (!pasta) return;
  {
    auto network = sandbox::UserNetwork::start(*pasta, agent_path(), sandbox::IpFamilies::ipv4_only);
    CHECK(uplink_ipv6(network).empty());
  }
  if (!host_has_global_ipv6()) {
    WARN("the case of both families skipped: this host has no IPv6 address pasta could copy");
    return;
  }
  auto network = sandbox::UserNetwork::start(*pasta, agent_path(), sandbox::IpFamilies::both);
  CHECK(!uplink_ipv6(network).empty());
}

TEST_CASE("pasta and its namespace holder die with the thread that started them", "[user_network]") {
  const auto pasta = usable_pasta();
  if (!pasta) return;
  // Started on a thread that then ends (as the server's worker thread does when the server
  // dies), while the object lives on: pasta (under unshare) gets SIGKILL, and its holder with it.
  std::optional<sandbox::UserNetwork> network;
  std::vector<std::string> holders;  // the processes in the namespace, found while pasta lives
  std::thread([&] {
    network.emplace(sandbox::UserNetwork::start(*pasta, agent_path(), sandbox::IpFamilies::ipv4_only));
    const std::string ns =
        std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(network->netns_fd())).string();
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::error_code ec;
      const auto link = std::filesystem::read_symlink(entry.path() / "ns" / "net", ec);
      if (!ec && link.string() == ns) holders.push_back(entry.path().filename().string());
    }
  }).join();
  REQUIRE(network);
  REQUIRE(!holders.empty());
  const std::string pid = std::to_string(network->pid());
  auto state = [](const std::string& id) {
    std::ifstream in("/proc/" + id + "/stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    return close == std::string::npos || close + 2 >= line.size() ? 'X' : line[close + 2];
  };
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = state(pid) == 'Z' || state(pid) == 'X';
    for (const auto& h : holders) gone = gone && (state(h) == 'Z' || state(h) == 'X');
    if (!gone) ::usleep(20000);
  }
  CHECK(gone);
}
