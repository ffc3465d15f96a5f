// The whole HTTP server over real sockets with a fake engine: RESTinio on the server's
// io_context, a closed connection cancelling its run, the body limit, the read timeout, and a
// shutdown that answers the run in flight before returning.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "mcp/server.h"
#include "tests/support/fake_engine.h"

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct RunningServer {
  test_support::EngineLog log;
  std::promise<std::pair<std::uint16_t, std::function<void()>>> listening;
  std::future<int> result;
  std::uint16_t port = 0;
  std::function<void()> stop;

  explicit RunningServer(unsigned read_timeout = 30) {
    mcp::CliOptions options;
    options.transport = mcp::Transport::http;
    options.http.port = 0;
    options.http.read_timeout_seconds = read_timeout;
    mcp::ServerHooks hooks;
    hooks.handle_signals = false;
    hooks.make_engine = [this](asio::io_context& io, const engine::EngineConfig&) {
      return std::make_unique<test_support::FakeEngine>(io, log);
    };
    result = std::async(std::launch::async, [this, options, hooks] {
      return mcp::serve_http(options, hooks, [this](std::uint16_t p, std::function<void()> s) {
        listening.set_value({p, std::move(s)});
      });
    });
    auto ready = listening.get_future();
    REQUIRE(ready.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    std::tie(port, stop) = ready.get();
  }
  ~RunningServer() {
    if (result.valid()) {
      stop();
      result.wait();
    }
  }
};

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

bool send_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until `needle` appears, the peer closes, or the time runs out.
std::string read_until(int fd, const std::string& needle, std::chrono::milliseconds timeout, bool* closed = nullptr) {
  std::string data;
  const auto until = Clock::now() + timeout;
  if (closed) *closed = false;
  while (needle.empty() || data.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    data.append(chunk, static_cast<std::size_t>(n));
  }
  return data;
}

std::string post(const std::string& body, const std::string& method, const std::string& extra = "") {
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: " + method + "\r\n" + extra + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

const std::string kMeta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})";

std::string run_request(const std::string& id) {
  return post(R"({"jsonrpc":"2.0","id":")" + id +
                  R"(","method":"tools/call","params":{"name":"execute_python","arguments":{"script":"x"},)" +
                  kMeta + "}}",
              "tools/call", "Mcp-Name: execute_python\r\n");
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto until = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

TEST_CASE("http server: requests over a socket, keep-alive, warm-up at start") {
  RunningServer server;
  CHECK(server.port != 0);
  const int fd = connect_to(server.port);
  REQUIRE(send_all(fd, post(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{)" + kMeta + "}}",
                            "server/discover")));
  auto reply = read_until(fd, "\"ttlMs\"", std::chrono::seconds(5));
  CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(reply.find("\"resultType\":\"complete\"") != std::string::npos);
  // The same connection serves the next request.
  REQUIRE(send_all(fd, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  reply = read_until(fd, "\"ok\"", std::chrono::seconds(5));
  CHECK(reply.find("HTTP/1.1 200") != std::string::npos);
  ::close(fd);
  CHECK(server.log.warmups == 1);
}

TEST_CASE("http server: a client closing its stream cancels its run at once") {
  RunningServer server;
  const int fd = connect_to(server.port);
  REQUIRE(send_all(fd, run_request("r1")));
  const auto head = read_until(fd, "text/event-stream", std::chrono::seconds(5));
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(eventually([&] { return server.log.executes == 1; }));
  CHECK(server.log.cancels == 0);
  ::close(fd);
  CHECK(eventually([&] { return server.log.cancels == 1; }, std::chrono::seconds(2)));
}

TEST_CASE("http server: shutdown answers the run in flight, then returns 0 within 2 s") {
  RunningServer server;
  const int fd = connect_to(server.port);
  REQUIRE(send_all(fd, run_request("r2")));
  REQUIRE(!read_until(fd, "text/event-stream", std::chrono::seconds(5)).empty());
  REQUIRE(eventually([&] { return server.log.executes == 1; }));
  const auto stopped_at = Clock::now();
  server.stop();
  bool closed = false;
  const auto rest = read_until(fd, "", std::chrono::seconds(3), &closed);
  CHECK(rest.find("\"id\":\"r2\"") != std::string::npos);
  CHECK(rest.find("end: cancelled") != std::string::npos);
  REQUIRE(server.result.wait_for(std::chrono::seconds(3)) == std::future_status::ready);
  CHECK(server.result.get() == 0);
  CHECK(Clock::now() - stopped_at < std::chrono::seconds(2));
  CHECK(server.log.shutdowns == 1);
  ::close(fd);
}

TEST_CASE("http server: a body over 16 MiB is not read; the server keeps serving") {
  RunningServer server;
  const int fd = connect_to(server.port);
  const std::string head =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
      std::to_string((17u << 20)) + "\r\n\r\n";
  send_all(fd, head + std::string(1 << 20, ' '));  // may fail once the server has hung up
  bool closed = false;
  const auto reply = read_until(fd, "", std::chrono::seconds(5), &closed);
  CHECK(closed);
  CHECK(reply.find("200 OK") == std::string::npos);
  ::close(fd);
  const int again = connect_to(server.port);
  REQUIRE(send_all(again, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  CHECK(read_until(again, "\"ok\"", std::chrono::seconds(5)).find("HTTP/1.1 200") != std::string::npos);
  ::close(again);
}

TEST_CASE("http server: a request that does not arrive in time is cut off (slowloris)") {
  RunningServer server(1);
  const int fd = connect_to(server.port);
  REQUIRE(send_all(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // headers never end
  const auto start = Clock::now();
  bool closed = false;
  read_until(fd, "", std::chrono::seconds(5), &closed);
  CHECK(closed);
  CHECK(Clock::now() - start < std::chrono::seconds(4));
  ::close(fd);
}
