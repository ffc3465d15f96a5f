#include "mcp/http/streams.h"

#include <utility>

#include "mcp/jsonrpc.h"

namespace mcp::http {

using json = nlohmann::json;

std::string sse_event(const json& message, const std::string& id) {
  std::string out;
  if (!id.empty()) out += "id: " + id + "\n";
  out += "data: " + jsonrpc::serialize(message) + "\n\n";
  return out;
}

HeaderList event_stream_headers() {
  return {{"Content-Type", "text/event-stream"},
          {"Cache-Control", "no-cache, no-store"},
          {"X-Accel-Buffering", "no"}};
}

void send_json(Response& response, int status, const json& body, HeaderList extra) {
  extra.emplace_back("Content-Type", "application/json");
  response.send(status, std::move(extra), jsonrpc::serialize(body));
}

void send_refusal(Response& response, const std::optional<json>& id, const OutputRefusal& refusal) {
  send_json(response, refusal.status, jsonrpc::error_response(id, jsonrpc::kInternalError, refusal.message),
            {{"Retry-After", std::to_string(refusal.retry_after_seconds)}});
}

// --- ResumableStream ---------------------------------------------------------------------------

ResumableStream::ResumableStream(asio::io_context& io, std::string id, HeldFn held)
    : timer_(io), id_(std::move(id)), on_held_(std::move(held)) {}

ResumableStream::~ResumableStream() {
  if (on_held_ && held_ != 0) on_held_(-static_cast<std::ptrdiff_t>(held_));
}

void ResumableStream::attach(std::shared_ptr<Response> response, std::optional<std::uint64_t> after,
                             HeaderList extra_headers) {
  if (response_) response_->end();  // one connection per stream: the newer one wins
  response_ = std::move(response);
  HeaderList headers = event_stream_headers();
  for (auto& header : extra_headers) headers.push_back(std::move(header));
  response_->start(200, std::move(headers));
  if (!after) {
    // The priming event: an id and no data, so the client can resume from the start.
    response_->write("id: " + id_ + "-0\ndata: \n\n");
  }
  for (const auto& [sequence, text] : events_) {
    if (!after || sequence > *after) response_->write(text);
  }
  // What was kept goes to the connection now (and counts as its unsent bytes until written).
  if (on_held_ && held_ != 0) on_held_(-static_cast<std::ptrdiff_t>(held_));
  held_ = 0;
  if (finished_) {
    delivered_ = true;
    response_->end();
    response_ = nullptr;
    return;
  }
  keep_alive();
}

void ResumableStream::detach(const Response* response) {
  if (response_.get() != response) return;  // already resumed on another connection
  response_ = nullptr;
  timer_.cancel();
}

void ResumableStream::event(const json& message) {
  if (finished_) return;
  const std::uint64_t sequence = next_sequence_++;
  std::string text = sse_event(message, id_ + "-" + std::to_string(sequence));
  bytes_ += text.size();
  if (response_) {
    response_->write(text);
  } else {
    held_ += text.size();
    if (on_held_) on_held_(static_cast<std::ptrdiff_t>(text.size()));
  }
  events_.emplace_back(sequence, std::move(text));
}

void ResumableStream::finish() {
  if (finished_) return;
  finished_ = true;
  finished_at_ = std::chrono::steady_clock::now();
  timer_.cancel();
  if (response_) {
    delivered_ = true;
    response_->end();
    response_ = nullptr;
  }
}

void ResumableStream::keep_alive() {
  timer_.expires_after(kKeepAliveInterval);
  timer_.async_wait([weak = weak_from_this()](const asio::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || !self->response_) return;
    self->response_->write(": keep-alive\n\n");
    self->keep_alive();
  });
}

// --- Reply -------------------------------------------------------------------------------------

Reply::Reply(asio::io_context& io, std::shared_ptr<Response> response, Options options)
    : timer_(io), response_(std::move(response)), options_(std::move(options)) {}

void Reply::begin_stream() {
  if (finished_ || streaming_ || !options_.may_stream) return;
  streaming_ = true;
  if (options_.make_resumable) resumable_ = options_.make_resumable();
  if (resumable_) {
    resumable_->attach(response_, std::nullopt, options_.headers);
    return;
  }
  HeaderList headers = event_stream_headers();
  for (const auto& header : options_.headers) headers.push_back(header);
  response_->start(200, std::move(headers));
  keep_alive();
}

void Reply::notify(const json& notification) {
  if (finished_ || !options_.may_stream) return;  // a JSON answer carries no notifications
  begin_stream();
  if (resumable_) {
    resumable_->event(notification);
  } else {
    write(sse_event(notification));
  }
}

void Reply::done(std::optional<json> response) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  if (!streaming_) {
    if (response) {
      send_json(*response_, options_.status(*response), *response, options_.headers);
    } else {
      response_->send(202, options_.headers, "");
    }
    return;
  }
  if (resumable_) {
    if (response) resumable_->event(*response);
    resumable_->finish();
    return;
  }
  if (response) write(sse_event(*response));
  response_->end();
}

void Reply::write(const std::string& data) { response_->write(data); }

void Reply::keep_alive() {
  timer_.expires_after(kKeepAliveInterval);
  timer_.async_wait([weak = weak_from_this()](const asio::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->finished_) return;
    self->write(": keep-alive\n\n");
    self->keep_alive();
  });
}

}  // namespace mcp::http
