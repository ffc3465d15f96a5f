// How one POST is answered: a JSON body when the answer is ready at once (or the client takes no
// event streams), otherwise a Server-Sent Events stream carrying the request's notifications and
// then its response. Streams of the initialize era are resumable (event ids, replay after
// Last-Event-ID on GET); those of the stateless era are not (closing one cancels the request).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/event_loop.h"
#include "mcp/http/exchange.h"
#include "mcp/http/output_budget.h"

namespace mcp::http {

// While a stream waits for a long run, a comment line goes out this often, so that proxies and
// clients with idle timeouts keep the connection.
inline constexpr auto kKeepAliveInterval = std::chrono::seconds(15);

// "data: <message>\n\n" (with "id: <id>\n" first when given).
std::string sse_event(const nlohmann::json& message, const std::string& id = {});
HeaderList event_stream_headers();

// A JSON body: Content-Type application/json.
void send_json(Response& response, int status, const nlohmann::json& body, HeaderList extra = {});
// A call refused by the output budget (output_budget.h): its status, Retry-After, and a JSON-RPC
// error naming the limit.
void send_refusal(Response& response, const std::optional<nlohmann::json>& id, const OutputRefusal& refusal);

// The events of one initialize-era stream, kept for replay: at most one connection is attached
// at a time; a new one (GET with Last-Event-ID) gets what it missed, then what follows.
class ResumableStream : public std::enable_shared_from_this<ResumableStream> {
 public:
  // `held`: told of each change (+/- bytes) in what the stream keeps while no connection takes it
  // (output_budget.h charges it to the session).
  using HeldFn = std::function<void(std::ptrdiff_t bytes)>;
  ResumableStream(asio::io_context& io, std::string id, HeldFn held = nullptr);
  ~ResumableStream();
  ResumableStream(const ResumableStream&) = delete;
  ResumableStream& operator=(const ResumableStream&) = delete;
  const std::string& id() const { return id_; }

  void attach(std::shared_ptr<Response> response, std::optional<std::uint64_t> after_sequence,
              HeaderList extra_headers = {});
  // The connection of `response` closed: keep collecting events for a later resumption.
  void detach(const Response* response);
  void event(const nlohmann::json& message);
  void finish();  // no more events: the attached response ends, later attachments get the rest
  bool finished() const { return finished_; }
  // Finished with a connection attached, or attached since: the client has had all of it.
  bool delivered() const { return delivered_; }
  bool attached() const { return response_ != nullptr; }
  std::size_t bytes() const { return bytes_; }
  std::chrono::steady_clock::time_point finished_at() const { return finished_at_; }

 private:
  void write(const std::string& data);
  void keep_alive();

  asio::steady_timer timer_;
  std::string id_;
  std::deque<std::pair<std::uint64_t, std::string>> events_;  // sequence, SSE text
  std::uint64_t next_sequence_ = 1;
  std::size_t bytes_ = 0;
  std::size_t held_ = 0;  // events kept since no connection was attached
  HeldFn on_held_;
  bool finished_ = false;
  bool delivered_ = false;
  std::chrono::steady_clock::time_point finished_at_{};
  std::shared_ptr<Response> response_;
};

// The way back for one request: JSON if answered at once, else a stream begun on the first
// notification or by begin_stream().
class Reply : public std::enable_shared_from_this<Reply> {
 public:
  struct Options {
    bool may_stream = false;  // the client accepts text/event-stream
    // The HTTP status of a JSON answer (errors may have their own).
    std::function<int(const nlohmann::json& response)> status = [](const nlohmann::json&) { return 200; };
    HeaderList headers;       // on every answer
    // For initialize-era requests: the stream kept for resumption. Null: a plain stream.
    std::function<std::shared_ptr<ResumableStream>()> make_resumable;
  };

  Reply(asio::io_context& io, std::shared_ptr<Response> response, Options options);

  void notify(const nlohmann::json& notification);
  // The response, or nullopt: nothing to send (a notification: 202; a cancelled request: the
  // stream just ends).
  void done(std::optional<nlohmann::json> response);
  // Called once the request was dispatched: a request still running gets its stream now.
  void begin_stream();
  bool finished() const { return finished_; }
  bool streaming() const { return streaming_; }

 private:
  void write(const std::string& data);
  void keep_alive();

  asio::steady_timer timer_;
  std::shared_ptr<Response> response_;
  Options options_;
  std::shared_ptr<ResumableStream> resumable_;
  bool streaming_ = false;
  bool finished_ = false;
};

}  // namespace mcp::http
