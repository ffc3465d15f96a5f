// The stdio transport: whole messages in order, and no unbounded output queue.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/event_loop.h"
#include "mcp/framing.h"
#include "mcp/stdio_transport.h"

namespace {

struct PipePair {
  int read = -1;
  int write = -1;
  PipePair() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
};

// Writes as much of `data` as the pipe takes right now.
std::size_t write_some(int fd, const std::string& data) {
  const ssize_t n = ::write(fd, data.data(), data.size());
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::size_t drain(int fd) {
  std::size_t total = 0;
  char buffer[65536];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) return total;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return total;
    total += static_cast<std::size_t>(n);
  }
}

}  // namespace

TEST_CASE("a client that does not read its output stops being read from") {
  PipePair input, output;
  ::fcntl(input.write, F_SETFL, O_NONBLOCK);
  asio::io_context io;
  std::atomic<std::size_t> lines_seen{0};
  // Every input line is answered with 1000 bytes; at most 8 KiB may wait unwritten.
  mcp::StdioTransport transport(io, sandbox::UniqueFd(input.read), sandbox::UniqueFd(output.write), 8192);
  mcp::LineFramer framer(
      [&](std::string_view) {
        ++lines_seen;
        transport.send(std::string(999, 'x'));
      },
      [](const mcp::OversizeLine&) {});
  std::atomic<bool> eof{false};
  transport.start([&](std::string_view bytes) { return framer.feed(bytes); }, [&] { eof = true; });
  std::thread loop([&] { io.run(); });

  const std::string line(99, 'l');
  const std::string lines = [&] {
    std::string s;
    for (int i = 0; i < 100; ++i) s += line + "\n";
    return s;
  }();
  // Keep offering input while never reading output, for a while.
  std::size_t accepted = 0;
  for (int round = 0; round < 200; ++round) {
    accepted += write_some(input.write, lines);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Without back-pressure the server would have taken all 2 MB and queued 20 MB of output.
  CHECK(accepted < 512 * 1024);
  const std::size_t seen_while_blocked = lines_seen.load();
  CHECK(seen_while_blocked < 2000);

  // Once the client reads, input flows again.
  std::size_t more = 0;
  for (int round = 0; round < 50; ++round) {
    drain(output.read);
    more += write_some(input.write, lines);
  }
  drain(output.read);
  CHECK(more > 0);
  CHECK(lines_seen.load() > seen_while_blocked);

  ::close(input.write);
  for (int i = 0; i < 100 && !eof; ++i) {
    drain(output.read);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  io.stop();
  loop.join();
  CHECK(eof);
  ::close(output.read);
}

TEST_CASE("messages leave one per line, whole and in order") {
  PipePair input, output;
  asio::io_context io;
  mcp::StdioTransport transport(io, sandbox::UniqueFd(input.read), sandbox::UniqueFd(output.write));
  std::string expected;
  for (int i = 0; i < 500; ++i) {
    std::string message = std::to_string(i) + std::string(static_cast<std::size_t>(i * 37 % 5000), 'm');
    expected += message + "\n";
    transport.send(message);
  }
  bool flushed = false;
  transport.flush([&] { flushed = true; });
  std::string got;
  std::thread reader([&] {
    char buffer[65536];
    while (got.size() < expected.size()) {
      const ssize_t n = ::read(output.read, buffer, sizeof buffer);
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
    }
  });
  while (!flushed) io.run_one();
  reader.join();
  CHECK(got == expected);
  CHECK(transport.queued_bytes() == 0);
  ::close(input.write);
  ::close(output.read);
}

TEST_CASE("stdout that is a pipe is grown to hold a large reply at once") {
  PipePair input, output;
  REQUIRE(::fcntl(output.read, F_GETPIPE_SZ) == 64 * 1024);
  asio::io_context io;
  mcp::StdioTransport transport(io, sandbox::UniqueFd(input.read), sandbox::UniqueFd(output.write));
  CHECK(::fcntl(output.read, F_GETPIPE_SZ) == mcp::kOutputPipeBytes);
  ::close(input.write);
  ::close(output.read);
}

TEST_CASE("a reader taking one message at a time gets the rest on resume, end of input last") {
  PipePair input, output;
  asio::io_context io;
  mcp::StdioTransport transport(io, sandbox::UniqueFd(input.read), sandbox::UniqueFd(output.write));
  std::vector<std::string> lines;
  mcp::LineFramer framer(
      [&](std::string_view line) {
        lines.emplace_back(line);
        framer.pause();
        transport.pause();
      },
      [](const mcp::OversizeLine&) {});
  bool eof = false;
  transport.start([&](std::string_view bytes) { return framer.feed(bytes); }, [&] {
    framer.finish();
    eof = true;
  });
  const std::string data = "one\ntwo\nthree\n";
  REQUIRE(::write(input.write, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  ::close(input.write);  // all of it and the end of input are there at once
  io.run_for(std::chrono::milliseconds(200));
  CHECK(lines == std::vector<std::string>{"one"});
  CHECK(transport.paused());
  CHECK_FALSE(eof);
  for (const char* expected : {"two", "three"}) {
    framer.resume();
    transport.resume();
    io.restart();
    io.run_for(std::chrono::milliseconds(100));
    CHECK(lines.back() == expected);
    CHECK_FALSE(eof);
  }
  framer.resume();
  transport.resume();
  io.restart();
  io.run_for(std::chrono::milliseconds(200));
  CHECK(lines.size() == 3);
  CHECK(eof);
  ::close(output.read);
}
