#include "sandbox/network_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "sandbox/netlink.h"
#include "sandbox/run_network.h"
#include "sandbox/setup_error.h"
#include "sandbox/user_network.h"

namespace sandbox {

namespace {

constexpr std::size_t kMaxMessage = 4096;

// One message and at most one fd (close-on-exec); -1 bytes on error (errno), 0 at the end.
ssize_t receive(int socket, std::string& text, UniqueFd& fd) {
  char buffer[kMaxMessage];
  iovec iov{buffer, sizeof buffer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (i == 0 && !fd) fd.reset(received); else ::close(received);
      }
    }
  }
  text.assign(buffer, static_cast<std::size_t>(n));
  return n;
}

// 0, or errno.
int send_text(int socket, const std::string& text, int fd) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? errno : 0;
}

}  // namespace

std::optional<AgentRequest> parse_agent_request(std::string_view text) {
  const auto space = text.find(' ');
  const std::string_view word = text.substr(0, space);
  const std::string_view argument = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  if (word == "attach") {
    if (space != std::string_view::npos) return std::nullopt;
    return AgentRequest{AgentRequest::Op::attach, ""};
  }
  if (argument.empty() || argument.find_first_of(std::string_view("\0\n", 2)) != std::string_view::npos) {
    return std::nullopt;
  }
  if (word == "close") return AgentRequest{AgentRequest::Op::close, std::string(argument)};
  if (word == "route") return AgentRequest{AgentRequest::Op::route, std::string(argument)};
  return std::nullopt;
}

std::string format_agent_request(const AgentRequest& request) {
  switch (request.op) {
    case AgentRequest::Op::close: return "close " + request.argument;
    case AgentRequest::Op::route: return "route " + request.argument;
    case AgentRequest::Op::attach: return "attach";
  }
  return "";
}

NetworkAgent NetworkAgent::start(const std::string& program, int userns_fd, int netns_fd, KillSwitch* kill_switch) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    throw SpawnError(std::string("cannot make the network agent's socket: ") + std::strerror(errno));
  }
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  ProcessSpec spec;
  spec.argv = {program};
  spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
  spec.fds = {theirs.get()};
  spec.output = Output::merged;
  spec.userns_fd = userns_fd;
  spec.netns_fd = netns_fd;
  spec.die_with_parent = true;
  Process process = Process::spawn(spec, kill_switch);
  return NetworkAgent(std::move(process), std::move(ours));
}

std::string NetworkAgent::ask(const AgentRequest& request, int fd) {
  std::lock_guard lock(*mutex_);
  const auto gone = [this](const std::string& why) {
    std::string said = process_.start_error();
    return NetlinkError("the network agent " + why + (said.empty() ? std::string() : ": " + said));
  };
  if (const int err = send_text(channel_.get(), format_agent_request(request), fd); err != 0) {
    throw gone(std::string("cannot be asked (") + std::strerror(err) + ")");
  }
  pollfd p{channel_.get(), POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, answer_timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) throw gone("did not answer within " + std::to_string(answer_timeout_ms / 1000) + " s");
  std::string answer;
  UniqueFd unused;
  const ssize_t n = receive(channel_.get(), answer, unused);
  if (n <= 0) throw gone(n == 0 ? "ended" : std::string("cannot be read: ") + std::strerror(errno));
  if (answer == "ok") return "";
  if (answer.rfind("error ", 0) == 0 && answer.size() > 6) return answer.substr(6);
  throw gone("answered something else: " + answer.substr(0, 200));
}

void NetworkAgent::close_route(const std::string& prefix) {
  if (auto why = ask({AgentRequest::Op::close, prefix}); !why.empty()) throw NetlinkError(why);
}

void NetworkAgent::route_runs(const std::string& nft_program) {
  std::string why;
  try {
    why = ask({AgentRequest::Op::route, nft_program});
  } catch (const NetlinkError& e) {
    throw SetupError(e.what());
  }
  if (!why.empty()) throw SetupError(why);
}

void NetworkAgent::attach_run(int run_pidfd) {
  if (auto why = ask({AgentRequest::Op::attach, ""}, run_pidfd); !why.empty()) throw NetlinkError(why);
}

int serve_network_agent(int channel) {
  std::optional<RunRouter> router;
  UniqueFd own(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  for (;;) {
    std::string text;
    UniqueFd fd;
    const ssize_t n = receive(channel, text, fd);
    if (n == 0) return 0;
    if (n < 0) return 1;
    std::string answer = "ok";
    const auto request = parse_agent_request(text);
    try {
      if (!request) {
        answer = "error not a request: " + text.substr(0, 200);
      } else if (request->op == AgentRequest::Op::close) {
        NetlinkSocket::open().add_unreachable_route(request->argument);
      } else if (request->op == AgentRequest::Op::route) {
        if (!own) throw SetupError(std::string("cannot open its own network namespace: ") + std::strerror(errno));
        if (!router) router.emplace(RunRouter::enable(own.get(), kUplinkName, request->argument));
      } else if (!fd) {
        answer = "error attach needs the run's pidfd";
      } else if (!router) {
        answer = "error this network does not route runs";
      } else {
        router->attach(fd.get());
      }
    } catch (const std::exception& e) {
      answer = std::string("error ") + e.what();
    }
    if (send_text(channel, answer, -1) != 0) return 1;
  }
}

}  // namespace sandbox
