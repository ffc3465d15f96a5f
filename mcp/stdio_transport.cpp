#include "mcp/stdio_transport.h"

#include <fcntl.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "sandbox/pipe_capacity.h"

namespace mcp {

StdioTransport::StdioTransport(asio::io_context& io, sandbox::UniqueFd in, sandbox::UniqueFd out,
                               std::size_t max_queued_output)
    : in_(io), out_(io), max_queued_(max_queued_output) {
  in_flags_ = ::fcntl(in.get(), F_GETFL);
  out_flags_ = ::fcntl(out.get(), F_GETFL);
  // A reply of megabytes (a run's large output, twice: text and structuredContent) goes into the
  // pipe while the client reads it, not 64 KiB per wait for the client (sandbox/pipe_capacity.h).
  sandbox::grow_pipe(out.get(), kOutputPipeBytes);
  // Regular files and /dev/null cannot be polled; asio accepts them and simply never blocks.
  in_.assign(in.release());
  out_.assign(out.release());
}

StdioTransport::~StdioTransport() {
  // The descriptions may be shared with a terminal or the parent: leave them as found.
  if (in_.is_open() && in_flags_ >= 0) ::fcntl(in_.native_handle(), F_SETFL, in_flags_);
  if (out_.is_open() && out_flags_ >= 0) ::fcntl(out_.native_handle(), F_SETFL, out_flags_);
}

void StdioTransport::start(BytesFn on_bytes, std::function<void()> on_eof) {
  on_bytes_ = std::move(on_bytes);
  on_eof_ = std::move(on_eof);
  reading_ = true;
  read_more();
}

void StdioTransport::stop_reading() {
  if (!reading_) return;
  reading_ = false;
  asio::error_code ignored;
  in_.cancel(ignored);
}

void StdioTransport::pause() { reader_paused_ = true; }

void StdioTransport::resume() {
  if (!reader_paused_ || !reading_) return;
  reader_paused_ = false;
  deliver();
}

void StdioTransport::read_more() {
  in_.async_read_some(asio::buffer(buffer_), [this](const asio::error_code& ec, std::size_t n) {
    if (!reading_) return;
    pending_ = std::string_view(buffer_.data(), n);
    if (ec) {
      if (ec != asio::error::eof) spdlog::warn("mcp: reading stdin failed: {}", ec.message());
      input_ended_ = true;
    }
    deliver();
  });
}

void StdioTransport::deliver() {
  while (!pending_.empty() && !reader_paused_) {
    const std::size_t taken = std::min(on_bytes_(pending_), pending_.size());
    if (!reading_) return;  // the callback may have stopped us
    if (taken < pending_.size()) reader_paused_ = true;  // resume() offers the rest
    pending_.remove_prefix(taken);
  }
  if (reader_paused_) return;
  if (input_ended_) {
    reading_ = false;
    if (on_eof_) on_eof_();
    return;
  }
  if (queued_bytes_ > max_queued_) {
    read_paused_ = true;  // resumed by write_more once the client has caught up
    return;
  }
  read_more();
}

void StdioTransport::send(std::string message) {
  if (output_failed_) return;
  message.push_back('\n');
  queued_bytes_ += message.size();
  queue_.push_back(std::move(message));
  if (writing_.empty()) write_more();
}

void StdioTransport::write_more() {
  if (read_paused_ && reading_ && (queued_bytes_ <= max_queued_ / 2 || output_failed_)) {
    read_paused_ = false;
    read_more();
  }
  if (queue_.empty() || output_failed_) {
    run_flush_waiters();
    return;
  }
  // Everything queued goes out in one gathered write, each message whole and in order.
  std::vector<asio::const_buffer> buffers;
  while (!queue_.empty()) {
    writing_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  buffers.reserve(writing_.size());
  for (const auto& message : writing_) buffers.emplace_back(asio::buffer(message));
  asio::async_write(out_, buffers, [this](const asio::error_code& ec, std::size_t) {
    for (const auto& message : writing_) queued_bytes_ -= message.size();
    writing_.clear();
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        spdlog::warn("mcp: writing stdout failed ({}); further messages are dropped",
                     ec.message());
      }
      output_failed_ = true;
      queue_.clear();
      queued_bytes_ = 0;
    }
    write_more();
    if (on_written_) on_written_();
  });
}

void StdioTransport::flush(std::function<void()> done) {
  flush_waiters_.push_back(std::move(done));
  if (writing_.empty() && (queue_.empty() || output_failed_)) run_flush_waiters();
}

void StdioTransport::run_flush_waiters() {
  auto waiters = std::move(flush_waiters_);
  flush_waiters_.clear();
  for (auto& waiter : waiters) waiter();
}

}  // namespace mcp
