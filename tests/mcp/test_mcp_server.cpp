// The whole stdio server over pipes with a fake engine: lifecycle, end of input, stdout hygiene.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

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

// The stdio server over the two pipes, with the fake engine logging into `log`, on its own thread;
// its exit code once its input ends.
std::future<int> start_stdio_server(const mcp::CliOptions& options, const Pipe& to_server, const Pipe& from_server,
                                    EngineLog& log) {
  return std::async(std::launch::async, [options, in = to_server.read, out = from_server.write, &log] {
    mcp::ServerHooks hooks;
    hooks.handle_signals = false;
    hooks.make_engine = [&log](asio::io_context& io, const engine::EngineConfig&) {
      return std::make_unique<FakeEngine>(io, log);
    };
    return mcp::serve_stdio(options, mcp::ProtocolFds{sandbox::UniqueFd(in), sandbox::UniqueFd(out)}, hooks);
  });
}

// A tools/call of the fake engine's "sleep" script (300 ms), as one line without its newline.
std::string sleep_call(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"execute_python","arguments":{"script":"sleep"}}})";
}

}  // namespace

TEST_CASE("stdio server: initialize, warm-up after it, end of input finishes the requests read, exits 0") {
  Pipe to_server, from_server;
  EngineLog log;
  mcp::CliOptions options;
  auto server = start_stdio_server(options, to_server, from_server, log);
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
  write_line(to_server.write, sleep_call(2));
  write_line(to_server.write, R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 3);  // not held up by the run
  CHECK(log.warmups == 1);

  // A request in the same write as the end of input is read and finished too.
  write_line(to_server.write, sleep_call(4));
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

TEST_CASE("stdio server: a call with no room waits unread, the messages before it are taken") {
  Pipe to_server, from_server;
  EngineLog log;
  mcp::CliOptions options;
  // Two run slots and replies of up to ~7 GiB each: the bound (three replies) has room for two
  // calls in flight, not three.
  options.engine.max_concurrent_runs = 2;
  options.engine.max_output_bytes = std::size_t{1} << 30;
  auto server = start_stdio_server(options, to_server, from_server, log);
  std::string buffer;
  write_line(to_server.write,
             R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == "init");
  const auto call = sleep_call;
  // All in one write: the server reads them together.
  std::string burst = call(1) + "\n" + call(2) + "\n" + R"({"jsonrpc":"2.0","id":10,"method":"ping"})" +
                      "\n" + call(3) + "\n" + R"({"jsonrpc":"2.0","id":11,"method":"ping"})" + "\n";
  REQUIRE(::write(to_server.write, burst.data(), burst.size()) == static_cast<ssize_t>(burst.size()));
  // The ping before the held call is answered at once; the runs end after 300 ms.
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 10);
  CHECK(log.executes == 2);  // call 3 is held: no room beside 1 and 2
  std::vector<json> order;
  for (int i = 0; i < 4; ++i) order.push_back(json::parse(read_line(from_server.read, buffer))["id"]);
  // 1 or 2 ends first; then 3 starts and the ping behind it is read; 3 ends 300 ms later.
  CHECK((order[0] == 1 || order[0] == 2));
  CHECK((order[1] == 11 || order[2] == 11));
  CHECK(order[3] == 3);
  CHECK(std::count(order.begin(), order.end(), json(1)) == 1);
  CHECK(std::count(order.begin(), order.end(), json(2)) == 1);
  CHECK(log.executes == 3);
  ::close(to_server.write);
  REQUIRE(server.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(server.get() == 0);
  ::close(from_server.read);
}

TEST_CASE("stdio server: a held call at end of input is still run and answered") {
  Pipe to_server, from_server;
  EngineLog log;
  mcp::CliOptions options;
  options.engine.max_concurrent_runs = 1;
  options.engine.max_output_bytes = std::size_t{1} << 30;  // room for one call at a time
  auto server = start_stdio_server(options, to_server, from_server, log);
  std::string burst =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n";
  for (int id = 1; id <= 3; ++id) {
    burst += sleep_call(id);
    if (id < 3) burst += "\n";  // the last one without newline: delivered by end of input
  }
  REQUIRE(::write(to_server.write, burst.data(), burst.size()) == static_cast<ssize_t>(burst.size()));
  ::close(to_server.write);
  std::string buffer;
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 0);
  for (int id = 1; id <= 3; ++id) {
    const auto reply = json::parse(read_line(from_server.read, buffer));
    CHECK(reply["id"] == id);  // one at a time, in order
    CHECK(reply["result"]["structuredContent"]["stdout"] == "slept\n");
  }
  REQUIRE(server.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(server.get() == 0);
  CHECK(log.executes == 3);
  ::close(from_server.read);
}

TEST_CASE("stdio server: a batch counts each call in it and waits for room for all of them") {
  Pipe to_server, from_server;
  EngineLog log;
  mcp::CliOptions options;
  options.engine.max_concurrent_runs = 2;
  options.engine.max_output_bytes = std::size_t{1} << 30;  // room for two calls in flight
  auto server = start_stdio_server(options, to_server, from_server, log);
  std::string buffer;
  write_line(to_server.write,
             R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  CHECK(json::parse(read_line(from_server.read, buffer))["result"]["protocolVersion"] == "2025-03-26");
  const auto call = sleep_call;
  const std::string burst = call(1) + "\n[" + call(2) + "," + call(3) + "]\n" +
                            R"({"jsonrpc":"2.0","id":9,"method":"ping"})" + "\n";
  REQUIRE(::write(to_server.write, burst.data(), burst.size()) == static_cast<ssize_t>(burst.size()));
  // Call 1 leaves room for one call, not two: the batch (and the ping behind it) wait for it.
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 1);
  CHECK(json::parse(read_line(from_server.read, buffer))["id"] == 9);
  const auto batch = json::parse(read_line(from_server.read, buffer));
  REQUIRE(batch.is_array());
  CHECK(batch.size() == 2);
  CHECK(log.executes == 3);
  ::close(to_server.write);
  REQUIRE(server.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(server.get() == 0);
  ::close(from_server.read);
}
