// Line transport over two file descriptors on the server's io_context: asynchronous reads,
// and writes queued so that messages never interleave (each goes out whole, in order).
// The reader may take part of what was read (one message at a time): the rest waits, and stdin
// is not read again, until it calls resume().
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
// What stdout holds when it is a pipe: 1 MiB, the most an unprivileged process may ask for by
// default (/proc/sys/fs/pipe-max-size).
inline constexpr int kOutputPipeBytes = 1 << 20;

class StdioTransport {
 public:
  // Returns how many of `bytes` it took; fewer than all pauses input until resume(), as does
  // pause() called from inside it.
  using BytesFn = std::function<std::size_t(std::string_view bytes)>;

  StdioTransport(asio::io_context& io, sandbox::UniqueFd in, sandbox::UniqueFd out,
                 std::size_t max_queued_output = kMaxQueuedOutputBytes);
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  // Starts reading; `on_eof` runs once at end of input or a read error.
  void start(BytesFn on_bytes, std::function<void()> on_eof);
  void stop_reading();
  // From the reader's callback: offer nothing more (the rest of this read, later reads, the end
  // of input) until resume().
  void pause();
  // The reader may take more: the bytes it left are offered again, then stdin is read on.
  void resume();
  bool paused() const { return reader_paused_; }
  // Queues one message; a newline is appended. Dropped once the output has failed.
  void send(std::string message);
  // Runs `done` when everything queued so far has been written (or the output failed).
  void flush(std::function<void()> done);
  // Runs `hook` after each write completes (queued_bytes() went down).
  void set_on_written(std::function<void()> hook) { on_written_ = std::move(hook); }
  bool output_failed() const { return output_failed_; }
  std::size_t queued_bytes() const { return queued_bytes_; }

 private:
  void read_more();
  // Offers what was read and not yet taken; reads on when all of it was taken.
  void deliver();
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
  bool reader_paused_ = false;  // the reader left bytes: nothing is read until resume()
  bool input_ended_ = false;    // end of input (or a read error) seen, after `pending_`
  std::string_view pending_;    // read into buffer_, not taken yet
  std::deque<std::string> queue_;
  std::vector<std::string> writing_;
  std::size_t queued_bytes_ = 0;
  std::size_t max_queued_;
  bool output_failed_ = false;
  std::vector<std::function<void()>> flush_waiters_;
  std::function<void()> on_written_;
};

}  // namespace mcp
