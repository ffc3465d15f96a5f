#include "sandbox/user_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox/netlink.h"
#include "sandbox/path_search.h"
#include "sandbox/setup_error.h"

namespace sandbox {

namespace {

// Addresses a sandbox must not reach through the host: link-local (cloud metadata services at
// 169.254.169.254 and others) and the well-known metadata addresses outside that range.
constexpr const char* kUnreachable[] = {"169.254.0.0/16", "100.100.100.200/32", "fd00:ec2::254/128"};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every pasta started, attached while it lives. Never destroyed: a worker thread may still use
// it while the process exits.
KillSwitch& network_switch() {
  static auto* const kill_switch = new KillSwitch;
  return *kill_switch;
}

}  // namespace

void kill_user_networks() { network_switch().kill(); }

std::vector<std::string> closed_prefixes(const std::vector<std::string>& host_addresses) {
  std::vector<std::string> out(std::begin(kUnreachable), std::end(kUnreachable));
  for (const auto& address : host_addresses) {
    const bool v6 = address.find(':') != std::string::npos;
    if (v6) {
      in6_addr a{};
      if (::inet_pton(AF_INET6, address.c_str(), &a) != 1) continue;
      if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_LINKLOCAL(&a) || IN6_IS_ADDR_UNSPECIFIED(&a)) continue;
    } else {
      in_addr a{};
      if (::inet_pton(AF_INET, address.c_str(), &a) != 1) continue;
      const std::uint32_t host = ntohl(a.s_addr);
      if ((host >> 24) == 127 || host == 0 || (host >> 16) == ((169u << 8) | 254u)) continue;
    }
    const std::string prefix = address + (v6 ? "/128" : "/32");
    if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
  }
  return out;
}

std::vector<std::string> host_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

std::optional<std::string> UserNetwork::find_pasta(const std::string& path) { return find_executable(path); }

std::vector<std::string> pasta_argv(const std::string& pasta_program, const std::vector<std::string>& holder,
                                    bool root, IpFamilies families) {
  std::vector<std::string> argv = {pasta_program, "--config-net", "--quiet", "--foreground",
                                   // No port forwarded either way, no gateway mapped to the host.
                                   "-t", "none", "-u", "none", "-T", "none", "-U", "none",
                                   "--no-map-gw",
                                   // Its interface has a name of our own (the runs' router's rules use it).
                                   "--ns-ifname", kUplinkName};
  if (families == IpFamilies::ipv4_only) argv.push_back("--ipv4-only");
  // As root: keeps root until the tap device is open (it may be root's alone).
  if (root) argv.insert(argv.end(), {"--runas", "0:0"});
  argv.push_back("--");
  argv.insert(argv.end(), holder.begin(), holder.end());
  return argv;
}

std::vector<std::string> user_network_argv(const std::string& pasta_program, const std::vector<std::string>& holder,
                                           bool root, IpFamilies families) {
  std::vector<std::string> argv = {"unshare"};
  // Without root, a pid namespace needs a user namespace: one mapping the user to itself, so
  // that pasta runs as that user and makes (and owns) the network's user namespace below it.
  if (!root) argv.insert(argv.end(), {"--user", "--map-current-user"});
  argv.insert(argv.end(), {"--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL", "--"});
  const auto pasta = pasta_argv(pasta_program, holder, root, families);
  argv.insert(argv.end(), pasta.begin(), pasta.end());
  return argv;
}

std::string UserNetwork::unavailable_reason_for(bool root, bool tun_open, const std::string& tun_state) {
  if (root || tun_open) return "";
  return "a user-mode network needs the server to run as root, or /dev/net/tun open to its user "
         "(udev's default mode 0666; " + tun_state + ")";
}

std::string UserNetwork::unavailable_reason() {
  const bool root = ::geteuid() == 0;
  const bool open = ::access("/dev/net/tun", R_OK | W_OK) == 0;
  std::string state = "there is no /dev/net/tun";
  if (struct stat st {}; !root && !open && ::stat("/dev/net/tun", &st) == 0) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", st.st_mode & 07777);
    state = std::string("/dev/net/tun is mode ") + octal + ", owner uid " + std::to_string(st.st_uid);
  }
  return unavailable_reason_for(root, open, state);
}

UserNetwork UserNetwork::start(const std::string& pasta_program, const std::string& agent_program,
                               IpFamilies families, int ready_timeout_ms) {
  const bool root = ::geteuid() == 0;
  ProcessSpec spec;
  // The holder prints once pasta has configured the namespace, then only waits. Nothing of it
  // outlives the server: pasta runs as pid 1 of a pid namespace of its own (util-linux's
  // unshare, which kills it when unshare ends), so its end takes every process it started (its
  // child that is not yet the holder included: that one would wait forever for a dead pasta);
  // unshare is killed when the thread that started it ends (the server's death included); its
  // own /proc (--mount-proc), where pasta finds its child by the pid it knows. The
  // holder also gets a parent-death signal (setpriv) before it says it is ready.
  spec.argv = user_network_argv(pasta_program, {"setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c",
                                                "echo mpes-ready; exec sleep 2147483647"},
                                root, families);
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"};
  spec.output = Output::merged;
  spec.die_with_parent = true;
  UserNetwork net(Process::spawn(spec, &network_switch()));
  Process& pasta = net.pasta_;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ready_timeout_ms);
  std::string said;
  while (said.find("mpes-ready\n") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !pasta.output()) {
      throw SpawnError("the user-mode network (pasta) did not start: " +
                       (said.empty() ? std::string("no answer") : said));
    }
    pollfd p{pasta.output().get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      throw SpawnError(std::string("poll: ") + std::strerror(errno));
    }
    char buffer[1024];
    const ssize_t n = ::read(pasta.output().get(), buffer, sizeof buffer);
    if (n > 0) said.append(buffer, static_cast<std::size_t>(n));
    if (n == 0) pasta.output().reset();
  }
  // The holder is pasta's child (unshare's grandchild, pid 1 of its own pid namespace): the
  // shell, or already the sleep it execs (the same process).
  auto children_of = [](pid_t pid) {
    const std::string id = std::to_string(pid);
    std::istringstream in(read_file("/proc/" + id + "/task/" + id + "/children"));
    std::vector<pid_t> out;
    for (pid_t child = 0; in >> child;) out.push_back(child);
    return out;
  };
  pid_t holder = 0;
  for (pid_t pasta_pid : children_of(pasta.pid())) {
    for (pid_t child : children_of(pasta_pid)) {
      const std::string comm = read_file("/proc/" + std::to_string(child) + "/comm");
      if (comm == "sh\n" || comm == "sleep\n") holder = child;
    }
  }
  if (holder == 0) throw SpawnError("the user-mode network (pasta) started no namespace holder");
  net.holder_.reset(static_cast<int>(::syscall(SYS_pidfd_open, holder, 0)));
  const std::string ns = "/proc/" + std::to_string(holder) + "/ns/";
  net.netns_.reset(::open((ns + "net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!root) net.userns_.reset(::open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!net.holder_ || !net.netns_ || (!root && !net.userns_)) {
    throw SpawnError("cannot open the user-mode network's namespace: " + std::string(std::strerror(errno)));
  }
  net.agent_.emplace(NetworkAgent::start(agent_program, net.userns_fd(), net.netns_fd(), &network_switch()));
  // Nothing routed to link-local or metadata addresses, nor to the host's own addresses.
  try {
    for (const auto& prefix : closed_prefixes(host_addresses())) net.agent_->close_route(prefix);
  } catch (const NetlinkError& e) {
    throw SpawnError(std::string("cannot close a route in the user-mode network: ") + e.what());
  }
  return net;
}

std::optional<std::string> UserNetwork::find_nft() {
  auto nft = find_executable("nft");
  if (!nft) nft = find_executable("nft", "/usr/sbin:/sbin");
  return nft;
}

void UserNetwork::enable_run_routing() {
  const auto nft = find_nft();
  if (!nft) throw SetupError("nft was not found (Debian: apt install nftables)");
  agent_->route_runs(*nft);
  routes_runs_ = true;
}

void UserNetwork::attach_run(int run_pidfd) {
  if (!routes_runs_) throw NetlinkError("this user-mode network does not route runs");
  agent_->attach_run(run_pidfd);
}

UserNetwork::~UserNetwork() {
  if (holder_) ::syscall(SYS_pidfd_send_signal, holder_.get(), SIGKILL, nullptr, 0);
  // pasta_ kills its group and reaps it.
}

}  // namespace sandbox
