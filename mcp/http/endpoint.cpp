#include "mcp/http/endpoint.h"

#include <cctype>
#include <map>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/call_table.h"
#include "mcp/jsonrpc.h"
#include "mcp/stateless_handler.h"

namespace mcp::http {

using json = nlohmann::json;
namespace rpc = jsonrpc;

namespace {

void refuse(Response& response, int status, int code, const std::string& message, HeaderList extra = {},
            const std::optional<json>& id = std::nullopt) {
  send_json(response, status, rpc::error_response(id, code, message), std::move(extra));
}

bool is_json_content(const std::optional<std::string>& content_type) {
  if (!content_type) return false;
  std::string type = content_type->substr(0, content_type->find(';'));
  type = trim_ows(type);
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type == "application/json";
}

const char* kNoSessionHelp =
    "Bad Request: no Mcp-Session-Id; start a session with initialize (protocol versions up to "
    "2025-11-25), or give every request the per-request _meta of protocol 2026-07-28";

}  // namespace

struct Endpoint::State : std::enable_shared_from_this<Endpoint::State> {
  State(asio::io_context& context, const ToolRegistry& registry, EndpointOptions opts)
      : io(context), tools(registry), options(std::move(opts)),
        stateless(registry, options.instructions, options.logger_name),
        sessions(context, registry, SessionOptions{options.instructions, LogLevel::warning, options.logger_name},
                 options.sessions, options.owner_ended, options.budget) {}

  asio::io_context& io;
  const ToolRegistry& tools;
  EndpointOptions options;
  CallTable calls;  // stateless calls, keyed by the server (client ids may collide)
  StatelessHandler stateless;
  Sessions sessions;
  bool accepting = true;
  std::uint64_t next_key = 1;
  std::map<std::uint64_t, std::set<std::string>> calls_by_connection;

  void post(const Request& request, std::shared_ptr<Response> response);
  void post_stateless(const Request& request, const json& message, Accepts accepts,
                      std::shared_ptr<Response> response);
};

void Endpoint::State::post(const Request& request, std::shared_ptr<Response> response) {
  if (!is_json_content(request.header("content-type"))) {
    refuse(*response, 415, rpc::kInvalidRequest,
           "Unsupported Media Type: POST a JSON-RPC message as Content-Type: application/json");
    return;
  }
  const Accepts accepts = parse_accept(request.header("accept"));
  if (!accepts.json && !accepts.event_stream) {
    refuse(*response, 406, rpc::kInvalidRequest,
           "Not Acceptable: answers are application/json or text/event-stream; accept both");
    return;
  }
  const auto message = rpc::parse(request.body);
  if (!message) {
    refuse(*response, 400, rpc::kParseError, "Parse error: the body is not valid JSON");
    return;
  }
  const auto session_id = request.header("mcp-session-id");
  switch (route_post(*message, session_id.has_value(), request.header("mcp-protocol-version"))) {
    case Route::stateless:
      post_stateless(request, *message, accepts, std::move(response));
      return;
    case Route::initialize:
      sessions.initialize(request, *message, accepts, std::move(response));
      return;
    case Route::session:
      sessions.post(request, *message, accepts, std::move(response));
      return;
    case Route::no_session: {
      const auto msg = rpc::classify(*message);
      refuse(*response, 400, rpc::kInvalidRequest, kNoSessionHelp, {}, msg.id);
      return;
    }
  }
}

void Endpoint::State::post_stateless(const Request& request, const json& message, Accepts accepts,
                                     std::shared_ptr<Response> response) {
  if (message.is_array()) {
    refuse(*response, 400, rpc::kInvalidRequest,
           "Invalid Request: protocol 2026-07-28 has no batches; POST one message at a time");
    return;
  }
  const auto msg = rpc::classify(message);
  switch (msg.kind) {
    case rpc::Kind::invalid:
      refuse(*response, 400, rpc::kInvalidRequest, "Invalid Request: " + msg.problem, {}, msg.id);
      return;
    case rpc::Kind::response:
      refuse(*response, 400, rpc::kInvalidRequest,
             "Invalid Request: clients send no responses in protocol 2026-07-28");
      return;
    case rpc::Kind::notification:
      // Accepted and ignored: over HTTP a request is cancelled by closing its stream.
      response->send(202, {}, "");
      return;
    case rpc::Kind::request:
      break;
  }
  const json& id = *msg.id;
  if (options.budget && msg.method == "tools/call") {
    if (auto refusal = options.budget->refuse_call(OutputBudget::connection_client(request.connection))) {
      send_refusal(*response, id, *refusal);
      return;
    }
  }
  const json params = message.value("params", json::object());
  auto answer_refusal = [&](const Refusal& refusal) {
    send_json(*response, stateless_error_status(refusal.code),
              rpc::error_response(id, refusal.code, refusal.message, refusal.data));
  };
  RequestMeta meta;
  if (auto refusal = read_request_meta(params, meta)) return answer_refusal(*refusal);
  const HeaderLookup header = [&request](std::string_view name) { return request.header(name); };
  if (auto refusal = check_mirrored_headers(header, msg.method, params, meta.protocol_version)) {
    return answer_refusal(*refusal);
  }
  if (auto refusal = check_protocol_version(meta.protocol_version)) return answer_refusal(*refusal);

  Reply::Options reply_options;
  reply_options.may_stream = accepts.event_stream;
  reply_options.status = [](const json& answer) {
    const auto error = answer.find("error");
    return error == answer.end() ? 200 : stateless_error_status(error->value("code", 0));
  };
  auto reply = std::make_shared<Reply>(io, response, std::move(reply_options));
  if (!accepts.json) reply->begin_stream();
  const std::string key = "h" + std::to_string(next_key++);
  const auto connection = request.connection;
  calls_by_connection[connection].insert(key);
  std::weak_ptr<State> weak = weak_from_this();
  Outlet outlet{[reply](json n) { reply->notify(n); },
                [reply, weak, connection, key](std::optional<json> answer) {
                  if (auto self = weak.lock()) {
                    const auto it = self->calls_by_connection.find(connection);
                    if (it != self->calls_by_connection.end()) {
                      it->second.erase(key);
                      if (it->second.empty()) self->calls_by_connection.erase(it);
                    }
                  }
                  reply->done(std::move(answer));
                }};
  CallOptions base;
  base.client = request.peer;
  // No protocol session in this era: its sessions belong to whoever may use this server (its
  // token), and their 128-bit ids are what a client passes to use one.
  base.owner = "http-stateless";
  stateless.dispatch(id, msg.method, params, meta, calls, key, base, outlet);
  reply->begin_stream();  // still running: its stream carries progress, then the result
}

Endpoint::Endpoint(asio::io_context& io, const ToolRegistry& tools, EndpointOptions options)
    : state_(std::make_shared<State>(io, tools, std::move(options))) {}

Endpoint::~Endpoint() = default;

void Endpoint::handle(Request request, std::shared_ptr<Response> response) {
  auto& state = *state_;
  try {
    if (request.path == kHealthPath) {
      const auto access = check_access(state.options.access, request.header("host"),
                                       request.header("origin"), std::nullopt, false);
      if (access != Access::allowed) {
        response->send(403, {{"Content-Type", "text/plain"}}, "Forbidden\n");
      } else if (request.method != "GET" && request.method != "HEAD") {
        response->send(405, {{"Allow", "GET"}, {"Content-Type", "text/plain"}}, "Method Not Allowed\n");
      } else {
        send_json(*response, state.accepting ? 200 : 503,
                  {{"status", state.accepting ? "ok" : "shutting down"}});
      }
      return;
    }
    if (request.path != kEndpointPath) {
      response->send(404, {{"Content-Type", "text/plain"}},
                     "Not Found: the MCP endpoint is " + std::string(kEndpointPath) + "\n");
      return;
    }
    const auto access = check_access(state.options.access, request.header("host"),
                                     request.header("origin"), request.header("authorization"));
    switch (access) {
      case Access::allowed:
        break;
      case Access::foreign_origin:
        refuse(*response, 403, rpc::kInvalidRequest,
               "Forbidden: requests from web pages of other origins are refused (Origin: " +
                   request.header("origin").value_or("") + ")");
        return;
      case Access::foreign_host:
        refuse(*response, 403, rpc::kInvalidRequest,
               "Forbidden: this server listens on loopback and answers only requests addressed to "
               "localhost, 127.0.0.1 or [::1] (Host: " + request.header("host").value_or("none") + ")");
        return;
      case Access::no_token:
      case Access::wrong_token:
        refuse(*response, 401, rpc::kInvalidRequest,
               access == Access::no_token ? "Unauthorized: send Authorization: Bearer <token>"
                                          : "Unauthorized: the bearer token is not valid",
               {{"WWW-Authenticate", www_authenticate(access)}});
        return;
    }
    if (!state.accepting) {
      refuse(*response, 503, rpc::kInternalError, "The server is shutting down", {{"Retry-After", "1"}});
      return;
    }
    if (request.method == "POST") {
      state.post(request, std::move(response));
    } else if (request.method == "GET" || request.method == "DELETE") {
      if (!request.header("mcp-session-id")) {
        refuse(*response, 405, rpc::kInvalidRequest,
               "Method Not Allowed: " + request.method +
                   " applies to a session of the initialize era (Mcp-Session-Id); protocol "
                   "2026-07-28 uses POST only",
               {{"Allow", "GET, POST, DELETE"}});
      } else if (request.method == "GET") {
        state.sessions.get(request, std::move(response));
      } else {
        state.sessions.remove(request, std::move(response));
      }
    } else {
      refuse(*response, 405, rpc::kInvalidRequest, "Method Not Allowed: " + request.method,
             {{"Allow", "GET, POST, DELETE"}});
    }
  } catch (const std::exception& e) {
    spdlog::error("http: internal error handling {} {}: {}", request.method, request.path, e.what());
    refuse(*response, 500, rpc::kInternalError, std::string("Internal error: ") + e.what());
  }
}

void Endpoint::connection_closed(std::uint64_t connection) {
  auto& state = *state_;
  state.sessions.connection_closed(connection);
  const auto it = state.calls_by_connection.find(connection);
  if (it == state.calls_by_connection.end()) return;
  const auto keys = std::move(it->second);
  state.calls_by_connection.erase(it);
  for (const auto& key : keys) {
    if (state.calls.cancel(key)) spdlog::debug("http: client closed the stream of call {}: cancelled", key);
  }
}

std::size_t Endpoint::calls_in_flight() const {
  return state_->calls.size() + state_->sessions.calls_in_flight();
}

std::size_t Endpoint::sessions() const { return state_->sessions.count(); }

void Endpoint::stop_accepting_and_cancel() {
  state_->accepting = false;
  state_->stateless.stop_accepting();
  state_->calls.cancel_all();
  state_->sessions.stop_accepting_and_cancel();
}

void Endpoint::abandon_in_flight(const std::string& reason) {
  state_->calls.abandon_all(reason);
  state_->sessions.abandon_in_flight(reason);
}

}  // namespace mcp::http
