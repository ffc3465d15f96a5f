// The network agent: its requests parse and print back exactly, odd ones are refused, and a
// started agent changes the namespace it was started in (as this user, in a user and network
// namespace of its own), answers each request with the kernel's reason, and its end is seen.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "sandbox/netlink.h"
#include "sandbox/network_agent.h"
#include "sandbox/process.h"
#include "sandbox/setup_error.h"

namespace fs = std::filesystem;
using sandbox::AgentRequest;

namespace {

std::string agent_path() {
  return (fs::read_symlink("/proc/self/exe").parent_path() / "mcp-python-exec-sandbox-network").string();
}

}  // namespace

TEST_CASE("agent requests print and parse back; anything else is not a request", "[network_agent]") {
  for (const AgentRequest& r : {AgentRequest{AgentRequest::Op::close, "169.254.0.0/16"},
                                AgentRequest{AgentRequest::Op::route, "/usr/sbin/nft"},
                                AgentRequest{AgentRequest::Op::attach, ""}}) {
    const auto back = sandbox::parse_agent_request(sandbox::format_agent_request(r));
    REQUIRE(back);
    CHECK(back->op == r.op);
    CHECK(back->argument == r.argument);
  }
  for (const char* bad : {"", "close", "close ", "route", "attach x", "open 1.2.3.4/32", "close a\nb",
                          "CLOSE 1.2.3.4/32"}) {
    CHECK_FALSE(sandbox::parse_agent_request(bad));
  }
  CHECK_FALSE(sandbox::parse_agent_request(std::string("close a\0b", 9)));
}

TEST_CASE("a started agent changes its own namespace, says the kernel's reason, and its end is seen",
          "[network_agent]") {
  // The namespaces: unshare(1) makes a user namespace (this user as its root) and a network
  // namespace, and waits in them.
  sandbox::ProcessSpec holder_spec;
  holder_spec.argv = {"unshare", "--user", "--map-root-user", "--net", "sleep", "60"};
  holder_spec.env = {"PATH=/usr/bin:/bin"};
  auto holder = sandbox::Process::spawn(holder_spec);
  const std::string ns = "/proc/" + std::to_string(holder.pid()) + "/ns/";
  const std::string own = fs::read_symlink("/proc/self/ns/net").string();
  for (int i = 0; i < 200; ++i) {
    std::error_code ec;
    const auto link = fs::read_symlink(ns + "net", ec);
    if (!ec && link.string() != own) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sandbox::UniqueFd userns(::open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC));
  sandbox::UniqueFd netns(::open((ns + "net").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(userns);
  REQUIRE(netns);
  REQUIRE(fs::read_symlink(ns + "net").string() != own);

  // As root the agent needs no user namespace to be root over the network; without root it does.
  auto agent = sandbox::NetworkAgent::start(agent_path(), ::geteuid() == 0 ? -1 : userns.get(), netns.get(), nullptr);
  agent.close_route("192.0.2.0/24");
  CHECK_THROWS_WITH(agent.close_route("not-a-prefix"), Catch::Contains("not-a-prefix"));
  CHECK_THROWS_WITH(agent.attach_run(holder.pidfd()), Catch::Contains("does not route runs"));
  CHECK_THROWS_AS(agent.route_runs("/nonexistent/nft"), sandbox::SetupError);

  // The route is there, in that namespace only.
  sandbox::ProcessSpec show;
  show.argv = {"ip", "-4", "route", "show", "type", "unreachable"};
  show.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  show.userns_fd = ::geteuid() == 0 ? -1 : userns.get();
  show.netns_fd = netns.get();
  const auto inside = sandbox::run_process(show);
  REQUIRE(inside.ok());
  CHECK(inside.out.find("unreachable 192.0.2.0/24") != std::string::npos);
  show.userns_fd = -1;
  show.netns_fd = -1;
  CHECK(sandbox::run_process(show).out.find("192.0.2.0/24") == std::string::npos);

  // Killed: the next request says it ended, promptly.
  REQUIRE(::kill(agent.pid(), SIGKILL) == 0);
  const auto before = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(agent.close_route("198.51.100.0/24"), sandbox::NetlinkError);
  CHECK(std::chrono::steady_clock::now() - before < std::chrono::seconds(5));
}
