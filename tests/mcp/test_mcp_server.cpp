// The whole stdio server over pipes with a fake engine: lifecycle, end of input, stdout hygiene.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "engine/event_loop.h"
#include "mcp/server.h"
#include "mcp/stdio_guard.h"
#include "tests/support/fake_engine.h"

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

using test_support::EngineLog;
using test_support::FakeEngine;

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
};

// Reads one line (without "\n") within `timeout`; "" on EOF or timeout.
std::string read_line(int fd, std::string& buffer, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto until = Clock::now() + timeout;
  while (true) {
    const auto nl = buffer.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return "";
    char chunk[65536];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return "";
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

void write_line(int fd, const std::string& line) {
  const std::string data = line + "\n";
  REQUIRE(::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
}

}  // namespace

TEST_CASE("stdio server: initialize, warm-up after it, end of input finishes the requests read, exits 0") {
  Pipe to_server, from_server;
  EngineLog log;
  mcp::CliOptions options;
  mcp::ServerHooks hooks;
  hooks.handle_signals = false;
  hooks.make_engine = [&log](asio::io_context& io, const engine::EngineConfig&) {
    return std::make_unique<FakeEngine>(io, log);
  };
  auto server = std::async(std::launch::async, [&] {
    return mcp::serve_stdio(options, mcp::ProtocolFds{sandbox::UniqueFd(to_server.read), sandbox::UniqueFd(from_server.write)},
                            hooks);
  });
  std::string buffer;
  write_line(to_server.write,
             R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  const auto init = json::parse(read_line(from_server.read, buffer));
  CHECK(init["id"] == 1);
  CHECK(init["result"]["protocolVersion"] == "2025-06-18");
  write_line(to_server.write, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  write_line(to_server.write, "{oops");
  const auto parse_error = json::parse(read_line(from_server.read, buffer));
  CHECK(parse_error["error"]["code"] == -32700);
  CHECK_FALSE(parse_error.contains("id"));
  write_line(to_server.write,
             R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_python","arguments":{"script":"sleep"}}})");
  write_line(to_server.write, R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 3);  // not held up by the run
  CHECK(log.warmups == 1);

  // A request in the same write as the end of input is read and finished too.
  write_line(to_server.write,
             R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_python","arguments":{"script":"sleep"}}})");
  ::close(to_server.write);  // end of input
  for (int i = 0; i < 2; ++i) {
    const auto result = json::parse(read_line(from_server.read, buffer));
    CHECK((result["id"] == 2 || result["id"] == 4));
    CHECK(result["result"]["structuredContent"]["stdout"] == "slept\n");
    CHECK(result["result"]["content"][0]["text"].get<std::string>().find("--- end:") == std::string::npos);
  }
  REQUIRE(server.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(server.get() == 0);
  CHECK(log.cancels == 0);
  CHECK(log.shutdowns == 1);
  CHECK(read_line(from_server.read, buffer, std::chrono::seconds(2)).empty());  // stdout closed, nothing more
  ::close(from_server.read);
}

TEST_CASE("take_over_stdio: private copies for the protocol, fds 0 and 1 point elsewhere") {
  Pipe in, out, err;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(in.read, 0);
    ::dup2(out.write, 1);
    ::dup2(err.write, 2);
    std::string error;
    auto fds = mcp::take_over_stdio(&error);
    if (!fds) ::_exit(10);
    if ((::fcntl(fds->in.get(), F_GETFD) & FD_CLOEXEC) == 0) ::_exit(11);
    if ((::fcntl(fds->out.get(), F_GETFD) & FD_CLOEXEC) == 0) ::_exit(12);
    // A stray write to fd 1 must land on stderr, never in the protocol stream.
    if (::write(1, "stray\n", 6) != 6) ::_exit(13);
    if (::write(fds->out.get(), "protocol\n", 9) != 9) ::_exit(14);
    char c;
    if (::read(0, &c, 1) != 0) ::_exit(15);  // /dev/null: immediate EOF
    ::_exit(0);
  }
  ::close(in.write);
  ::close(out.write);
  ::close(err.write);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::string out_buffer, err_buffer;
  CHECK(read_line(out.read, out_buffer, std::chrono::seconds(2)) == "protocol");
  CHECK(read_line(out.read, out_buffer, std::chrono::seconds(2)).empty());
  CHECK(read_line(err.read, err_buffer, std::chrono::seconds(2)) == "stray");
  ::close(in.read);
  ::close(out.read);
  ::close(err.read);
}
