// Line transport over two file descriptors on the server's io_context: asynchronous reads,
// and writes queued so that messages never interleave (each goes out whole, in order).
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>


#include "engine/event_loop.h"
#include "sandbox/unique_fd.h"

namespace mcp {

// Input is not read while more than this much output waits for a client that does not read it.
inline constexpr std::size_t kMaxQueuedOutputBytes = std::size_t{64} << 20;

class StdioTransport {
 public:
  using BytesFn = std::function<void(std::string_view bytes)>;

  StdioTransport(asio::io_context& io, sandbox::UniqueFd in, sandbox::UniqueFd out,
                 std::size_t max_queued_output = kMaxQueuedOutputBytes);
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  // Starts reading; `on_eof` runs once at end of input or a read error.
  void start(BytesFn on_bytes, std::function<void()> on_eof);
  void stop_reading();
  // Queues one message; a newline is appended. Dropped once the output has failed.
  void send(std::string message);
  // Runs `done` when everything queued so far has been written (or the output failed).
  void flush(std::function<void()> done);
  bool output_failed() const { return output_failed_; }
  std::size_t queued_bytes() const { return queued_bytes_; }

 private:
  void read_more();
  void write_more();
  void run_flush_waiters();

  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  int in_flags_ = -1;   // file status flags to restore (asio turns on O_NONBLOCK)
  int out_flags_ = -1;
  std::array<char, 64 * 1024> buffer_{};
  BytesFn on_bytes_;
  std::function<void()> on_eof_;
  bool reading_ = false;
  bool read_paused_ = false;  // the client is not reading our output: stop taking its input
  std::deque<std::string> queue_;
  std::vector<std::string> writing_;
  std::size_t queued_bytes_ = 0;
  std::size_t max_queued_;
  bool output_failed_ = false;
  std::vector<std::function<void()>> flush_waiters_;
};

}  // namespace mcp
