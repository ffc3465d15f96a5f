#include "sandbox/user_network.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox/path_search.h"

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

std::optional<std::string> UserNetwork::find_pasta(const std::string& path) { return find_executable(path); }

std::vector<std::string> pasta_argv(const std::string& pasta_program, const std::vector<std::string>& holder) {
  std::vector<std::string> argv = {pasta_program, "--config-net", "--quiet", "--foreground",
                                   // No port forwarded either way, no gateway mapped to the host.
                                   "-t", "none", "-u", "none", "-T", "none", "-U", "none",
                                   "--no-map-gw",
                                   // Keeps root until the tap device is open (it may be root's alone).
                                   "--runas", "0:0", "--"};
  argv.insert(argv.end(), holder.begin(), holder.end());
  return argv;
}

UserNetwork UserNetwork::start(const std::string& pasta_program, int ready_timeout_ms) {
  ProcessSpec spec;
  // The holder prints once pasta has configured the namespace, then only waits. Nothing of it
  // outlives the server: pasta runs as pid 1 of a pid namespace of its own (util-linux's
  // unshare, which kills it when unshare ends), so its end takes every process it started (its
  // child that is not yet the holder included: that one would wait forever for a dead pasta);
  // unshare is killed when the thread that started it ends (the server's death included); its
  // own /proc (--mount-proc), where pasta finds its child by the pid it knows. The
  // holder also gets a parent-death signal (setpriv) before it says it is ready.
  spec.argv = {"unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL", "--"};
  const auto pasta_command = pasta_argv(pasta_program, {"setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c",
                                                        "echo mpes-ready; exec sleep 2147483647"});
  spec.argv.insert(spec.argv.end(), pasta_command.begin(), pasta_command.end());
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
  net.netns_.reset(::open(("/proc/" + std::to_string(holder) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!net.holder_ || !net.netns_) {
    throw SpawnError("cannot open the user-mode network's namespace: " + std::string(std::strerror(errno)));
  }
  // Nothing routed to link-local or metadata addresses.
  for (const char* prefix : kUnreachable) {
    ProcessSpec ip;
    ip.argv = {"ip", std::string(prefix).find(':') != std::string::npos ? "-6" : "-4", "route", "add",
               "unreachable", prefix};
    ip.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
    ip.output = Output::merged;
    ip.netns_fd = net.netns_.get();
    ip.timeout_ms = 5000;
    const ProcessResult r = run_process(ip);
    if (!r.ok()) {
      throw SpawnError("cannot close " + std::string(prefix) + " in the user-mode network (ip route): " + r.out);
    }
  }
  return net;
}

UserNetwork::~UserNetwork() {
  if (holder_) ::syscall(SYS_pidfd_send_signal, holder_.get(), SIGKILL, nullptr, 0);
  // pasta_ kills its group and reaps it.
}

}  // namespace sandbox
