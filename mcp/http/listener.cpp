#include "mcp/http/listener.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>
#include <vector>

// RESTinio uses asio's deprecated names and warns in places under our flags; its headers are
// included here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <restinio/all.hpp>
#pragma GCC diagnostic pop
#include <spdlog/spdlog.h>

#include "mcp/http/rules.h"

namespace mcp::http {

namespace {

// RESTinio's log lines go to the server log: its errors (a malformed or over-long request, a
// failed socket) as warnings, the rest at debug level.
class SpdlogLogger {
 public:
  template <typename Builder>
  void trace(Builder&& build) const {
    if (spdlog::should_log(spdlog::level::trace)) spdlog::trace("http: {}", build());
  }
  template <typename Builder>
  void info(Builder&& build) const {
    if (spdlog::should_log(spdlog::level::debug)) spdlog::debug("http: {}", build());
  }
  template <typename Builder>
  void warn(Builder&& build) const {
    if (spdlog::should_log(spdlog::level::debug)) spdlog::debug("http: {}", build());
  }
  template <typename Builder>
  void error(Builder&& build) const {
    if (!spdlog::should_log(spdlog::level::warn)) return;
    std::string text = build();
    // The parser stops when a limit is exceeded; say which limits those are.
    if (text.find("HPE_CB_headers_complete") != std::string::npos ||
        text.find("HPE_CB_body") != std::string::npos || text.find("HPE_CB_header") != std::string::npos) {
      text += " (a request over the limits: body over 16 MiB, or too many or too large headers; "
              "the connection was closed without reading it)";
    }
    spdlog::warn("http: {}", text);
  }
};

struct StateListener {
  std::function<void(std::uint64_t)> closed;
  void state_changed(const restinio::connection_state::notice_t& notice) noexcept {
    if (!restinio::holds_alternative<restinio::connection_state::closed_t>(notice.cause())) return;
    if (!closed) return;
    try {
      closed(notice.connection_id());
    } catch (const std::exception& e) {
      spdlog::error("http: handling a closed connection failed: {}", e.what());
    }
  }
};

// Requests RESTinio reads ahead on one connection before the first is answered.
constexpr std::size_t kMaxPipelinedRequests = 64;

struct Traits : restinio::traits_t<restinio::asio_timer_manager_t, SpdlogLogger,
                                   restinio::default_request_handler_t, restinio::noop_strand_t> {
  using connection_state_listener_t = StateListener;
  static constexpr bool use_connection_count_limiter = true;
};

using Server = restinio::http_server_t<Traits>;

// How long the acceptor waits after a failed accept before it accepts again.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

}  // namespace
}  // namespace mcp::http

// RESTinio 0.6.16's acceptor drops an accept that completed with an error and never accepts on
// that socket again: one EMFILE or ENFILE, or ENOSPC when the event loop cannot watch the new
// connection (the epoll watches of the server's user used up, which the runs of a server started
// unprivileged can do), and the server took no connection ever after. Here the accept's error is
// logged and the acceptor accepts again after a pause (at once it would spin while the cause
// lasts), unless it was closed.
template <>
void restinio::impl::acceptor_t<mcp::http::Traits>::call_accept_now(std::size_t index) noexcept {
  m_acceptor.async_accept(
      this->socket(index).lowest_layer(),
      asio_ns::bind_executor(get_executor(), [index, ctx = this->shared_from_this()](const auto& ec) noexcept {
        if (!ec) {
          ctx->accept_current_connection(index, ec);
          return;
        }
        if (ec == asio_ns::error::operation_aborted || !ctx->m_acceptor.is_open()) return;
        spdlog::error("http: accepting a connection failed: {}; accepting again in {} ms", ec.message(),
                      mcp::http::kAcceptRetry.count());
        try {
          auto timer = std::make_shared<asio_ns::steady_timer>(ctx->get_executor(), mcp::http::kAcceptRetry);
          timer->async_wait([index, ctx, timer](const auto& waited) noexcept {
            if (!waited && ctx->m_acceptor.is_open()) ctx->accept_next(index);
          });
        } catch (const std::exception&) {
          ctx->accept_next(index);  // no memory for a timer: at once
        }
      }));
}

namespace mcp::http {
namespace {

// Writes handed to RESTinio and not yet completed, and their bytes charged to their client
// (output_budget.h) until then.
struct WriteTracker {
  std::size_t pending = 0;
  std::vector<std::function<void()>> waiters;
  std::shared_ptr<OutputBudget> budget;

  restinio::write_status_cb_t track(std::shared_ptr<WriteTracker> self, const std::string& client = {},
                                    std::size_t bytes = 0) {
    ++pending;
    if (self->budget && bytes != 0) self->budget->add(client, bytes);
    return [self, client, bytes](const restinio::asio_ns::error_code&) {
      if (self->budget && bytes != 0) self->budget->remove(client, bytes);
      if (--self->pending != 0) return;
      auto ready = std::move(self->waiters);
      self->waiters.clear();
      for (auto& w : ready) w();
    };
  }
};

restinio::http_status_line_t status_line(int status) {
  const char* reason = "Status";
  switch (status) {
    case 200: reason = "OK"; break;
    case 202: reason = "Accepted"; break;
    case 204: reason = "No Content"; break;
    case 400: reason = "Bad Request"; break;
    case 401: reason = "Unauthorized"; break;
    case 403: reason = "Forbidden"; break;
    case 404: reason = "Not Found"; break;
    case 405: reason = "Method Not Allowed"; break;
    case 406: reason = "Not Acceptable"; break;
    case 413: reason = "Content Too Large"; break;
    case 415: reason = "Unsupported Media Type"; break;
    case 429: reason = "Too Many Requests"; break;
    case 500: reason = "Internal Server Error"; break;
    case 503: reason = "Service Unavailable"; break;
    default: break;
  }
  return restinio::http_status_line_t{restinio::http_status_code_t{static_cast<std::uint16_t>(status)},
                                      reason};
}

// Two rules of RESTinio 0.6 this adapter keeps:
// - Nothing is handed to RESTinio from inside its own call of the request handler: every write
//   is posted to the io loop. A response written there can start a write while the connection's
//   table of pipelined requests is full, and once that write completes RESTinio reads the next
//   pipelined request into the full table, which throws "response_context_table is full" and
//   closes the connection, losing the answers of requests it had already taken.
// - An HTTP/1.0 request gets no chunked body (RFC 9112 forbids Transfer-Encoding to 1.0). RESTinio
//   does not pass the request's HTTP version on, only whether the connection stays open after it,
//   which a 1.0 request does not ask for: a request on a connection that closes after it (1.0,
//   or Connection: close) gets its stream's pieces kept and sent whole, with Content-Length.
class RestinioResponse final : public Response, public std::enable_shared_from_this<RestinioResponse> {
 public:
  ~RestinioResponse() override {
    // A stream kept for a closing connection and never ended (the connection went first): its
    // bytes are no longer the client's.
    if (whole_ && started_ && !finished_ && writes_->budget) writes_->budget->remove(client_, held_body_.size());
  }
  RestinioResponse(asio::io_context& io, restinio::request_handle_t request, std::shared_ptr<WriteTracker> writes)
      : io_(io), request_(std::move(request)), writes_(std::move(writes)),
        client_(OutputBudget::connection_client(request_->connection_id())),
        whole_(!request_->header().should_keep_alive()) {}

  void charge_to(std::string client) override { client_ = std::move(client); }

  void send(int status, HeaderList headers, std::string body) override {
    if (finished_ || started_) return;
    finished_ = true;
    const std::size_t bytes = status != 204 ? body.size() : 0;
    later([status, headers = std::move(headers), body = std::move(body),
           done = writes_->track(writes_, client_, bytes)](RestinioResponse& self) mutable {
      auto response = self.request_->create_response(status_line(status));
      for (auto& [name, value] : headers) response.append_header(name, std::move(value));
      if (status != 204) response.set_body(std::move(body));
      response.done(std::move(done));
    });
  }

  void start(int status, HeaderList headers) override {
    if (finished_ || started_) return;
    started_ = true;
    if (whole_) {
      held_status_ = status;
      held_headers_ = std::move(headers);
      return;
    }
    later([status, headers = std::move(headers), done = writes_->track(writes_)](RestinioResponse& self) mutable {
      self.stream_.emplace(self.request_->create_response<restinio::chunked_output_t>(status_line(status)));
      for (auto& [name, value] : headers) self.stream_->append_header(name, std::move(value));
      self.stream_->flush(std::move(done));
    });
  }

  void write(std::string data) override {
    if (finished_ || !started_ || data.empty()) return;
    const std::size_t bytes = data.size();
    if (whole_) {
      // Kept until the end, and charged to the client meanwhile like bytes not yet written.
      if (writes_->budget) writes_->budget->add(client_, bytes);
      held_body_ += data;
      return;
    }
    later([data = std::move(data), done = writes_->track(writes_, client_, bytes)](RestinioResponse& self) mutable {
      if (!self.stream_) return;
      self.stream_->append_chunk(std::move(data));
      self.stream_->flush(std::move(done));
    });
  }

  void end() override {
    if (finished_ || !started_) return;
    if (whole_) {
      if (writes_->budget) writes_->budget->remove(client_, held_body_.size());
      started_ = false;
      send(held_status_, std::move(held_headers_), std::move(held_body_));
      return;
    }
    finished_ = true;
    later([done = writes_->track(writes_)](RestinioResponse& self) mutable {
      if (self.stream_) self.stream_->done(std::move(done));
    });
  }

 private:
  template <typename Step>
  void later(Step step) {
    asio::post(io_, [self = shared_from_this(), step = std::move(step)]() mutable { step(*self); });
  }

  asio::io_context& io_;
  restinio::request_handle_t request_;
  std::shared_ptr<WriteTracker> writes_;
  std::optional<restinio::response_builder_t<restinio::chunked_output_t>> stream_;
  bool started_ = false;
  bool finished_ = false;
  std::string client_;
  bool whole_ = false;
  int held_status_ = 200;
  HeaderList held_headers_;
  std::string held_body_;
};

Request to_request(const restinio::request_handle_t& handle) {
  Request request;
  const auto& header = handle->header();
  request.method = header.method().c_str();
  request.path = std::string(header.path());
  header.for_each_field([&request](const restinio::http_header_field_t& field) {
    std::string name(field.name());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    request.headers.emplace_back(std::move(name), trim_ows(field.value()));
  });
  request.body = handle->body();
  request.connection = handle->connection_id();
  request.peer = handle->remote_endpoint().address().to_string();
  return request;
}

}  // namespace

struct Listener::Impl {
  asio::io_context& io;
  ListenerOptions options;
  Handler handler;
  std::shared_ptr<StateListener> state_listener = std::make_shared<StateListener>();
  std::shared_ptr<WriteTracker> writes = std::make_shared<WriteTracker>();
  std::uint16_t port = 0;
  std::unique_ptr<Server> server;

  Impl(asio::io_context& context, ListenerOptions opts, Handler h)
      : io(context), options(std::move(opts)), handler(std::move(h)) {}
};

Listener::Listener(asio::io_context& io, ListenerOptions options, Handler handler, ClosedFn closed)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(handler))) {
  impl_->state_listener->closed = std::move(closed);
  impl_->writes->budget = impl_->options.budget;
}

Listener::~Listener() {
  impl_->state_listener->closed = nullptr;
  if (impl_->server) {
    try {
      impl_->server->close_sync();
    } catch (const std::exception& e) {
      spdlog::debug("http: closing the listener: {}", e.what());
    }
  }
}

void Listener::open() {
  auto& impl = *impl_;
  const auto& o = impl.options;
  Impl* raw = impl_.get();
  restinio::server_settings_t<Traits> settings;
  settings.address(o.host)
      .port(o.port)
      // Requests are read ahead, so a client that closes its connection while its requests run
      // is noticed at once (2026-07-28: a disconnect is the request's cancellation). RESTinio
      // stops reading while this many wait on a connection, and then would not see it close. A
      // client that only shuts down its sending side looks the same (end of stream) and is
      // treated so.
      .max_pipelined_requests(kMaxPipelinedRequests)
      .max_parallel_connections(o.max_connections)
      .read_next_http_message_timelimit(o.read_timeout)
      .write_http_response_timelimit(o.write_timeout)
      // Runs end by their own timeouts and every accepted request is answered; the connection
      // must not be cut while one is running.
      .handle_request_timeout(std::chrono::hours(24 * 365))
      .incoming_http_msg_limits(restinio::incoming_http_msg_limits_t{}
                                    .max_url_size(8 * 1024)
                                    .max_field_name_size(1024)
                                    .max_field_value_size(64 * 1024)
                                    .max_field_count(256)
                                    .max_body_size(o.max_body_bytes))
      .connection_state_listener(impl.state_listener)
      .acceptor_post_bind_hook([raw](restinio::asio_ns::ip::tcp::acceptor& acceptor) {
        raw->port = acceptor.local_endpoint().port();
      })
      .request_handler([raw](const restinio::request_handle_t& request) {
        auto response = std::make_shared<RestinioResponse>(raw->io, request, raw->writes);
        raw->handler(to_request(request), response);
        return restinio::request_accepted();
      });
  impl.server = std::make_unique<Server>(restinio::external_io_context(impl.io), std::move(settings));
  try {
    impl.server->open_sync();
  } catch (const std::exception& e) {
    impl.server.reset();
    throw std::runtime_error("cannot listen on " + o.host + " port " + std::to_string(o.port) +
                             ": " + e.what());
  }
}

std::uint16_t Listener::port() const { return impl_->port; }

void Listener::stop_accepting() {
  if (!impl_->server) return;
  try {
    impl_->server->close_sync();
  } catch (const std::exception& e) {
    spdlog::debug("http: closing the listener: {}", e.what());
  }
}

void Listener::when_flushed(std::function<void()> done) {
  if (impl_->writes->pending == 0) {
    done();
    return;
  }
  impl_->writes->waiters.push_back(std::move(done));
}

}  // namespace mcp::http
