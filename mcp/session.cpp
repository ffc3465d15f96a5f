#include "mcp/session.h"

#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/server_info.h"

namespace mcp {

using json = nlohmann::json;
namespace rpc = jsonrpc;

std::string_view negotiate_protocol_version(std::string_view requested) {
  for (auto version : kSupportedProtocolVersions) {
    if (version == requested) return version;
  }
  return kSupportedProtocolVersions.front();
}

namespace detail {

namespace {
// Called exactly once per incoming message: the response, or nullopt when there is none.
using Reply = std::function<void(std::optional<json>)>;
}  // namespace

class CallImpl;

struct SessionState : std::enable_shared_from_this<SessionState> {
  SessionState(const ToolRegistry& tool_registry, SessionOptions opts, Session::Sink out)
      : tools(tool_registry), options(std::move(opts)), sink(std::move(out)),
        log_level(options.log_level) {}

  const ToolRegistry& tools;
  SessionOptions options;
  Session::Sink sink;
  std::function<void()> on_initialized;
  std::string version;  // negotiated; "" before initialize
  bool initialized = false;
  bool accepting = true;
  LogLevel log_level;
  std::map<std::string, std::shared_ptr<CallImpl>> calls;  // by serialized id
  std::vector<std::function<void()>> idle_waiters;  // Session::when_idle

  // Runs the idle waiters once no call is in flight.
  void notify_if_idle() {
    if (!calls.empty() || idle_waiters.empty()) return;
    auto waiters = std::move(idle_waiters);
    idle_waiters.clear();
    for (auto& waiter : waiters) waiter();
  }

  void send(const json& message) { sink(rpc::serialize(message)); }
  Reply direct_reply();
  void dispatch(const json& message, const Reply& reply);
  void dispatch_batch(const json& batch);
  void handle_request(const json& id, const std::string& method, const json& params,
                      const Reply& reply);
  void handle_notification(const std::string& method, const json& params);
  void initialize(const json& id, const json& params, const Reply& reply);
  void call_tool(const json& id, const json& params, const Reply& reply);
  void log(LogLevel level, json data);
};

class CallImpl final : public ToolCall, public std::enable_shared_from_this<CallImpl> {
 public:
  CallImpl(std::weak_ptr<SessionState> state, json id, std::string key, json arguments,
           std::optional<json> token, Reply reply)
      : state_(std::move(state)), id_(std::move(id)), key_(std::move(key)),
        arguments_(std::move(arguments)), token_(std::move(token)), reply_(std::move(reply)) {}

  const json& arguments() const override { return arguments_; }

  void progress(double value, std::optional<double> total, const std::string& message) override {
    if (done_ || !token_ || !std::isfinite(value)) return;
    if (last_progress_ && !(value > *last_progress_)) return;
    auto state = state_.lock();
    if (!state) return;
    last_progress_ = value;
    json params = {{"progressToken", *token_}, {"progress", value}};
    if (total && std::isfinite(*total)) params["total"] = *total;
    // "message" exists in progress notifications from 2025-03-26 on.
    if (!message.empty() && state->version >= "2025-03-26") params["message"] = message;
    state->send(rpc::notification("notifications/progress", std::move(params)));
  }

  void finish(json call_tool_result) override {
    if (done_) return;
    complete(rpc::result_response(id_, std::move(call_tool_result)));
  }

  void on_cancel(std::function<void()> hook) override {
    if (cancel_requested_) {
      hook();
      return;
    }
    hooks_.push_back(std::move(hook));
  }

  bool cancelled() const override { return cancel_requested_; }

  void log(LogLevel level, json data) override {
    if (auto state = state_.lock()) state->log(level, std::move(data));
  }

  // Runs the cancel hooks once; the response is still sent unless suppressed.
  void request_cancel() {
    if (cancel_requested_) return;
    cancel_requested_ = true;
    auto self = shared_from_this();
    auto hooks = std::move(hooks_);
    hooks_.clear();
    for (auto& hook : hooks) hook();
  }

  // notifications/cancelled: the client no longer wants an answer, so none is sent.
  void suppress() {
    if (done_) return;
    auto self = shared_from_this();
    done_ = true;
    detach();
    reply_(std::nullopt);
    if (auto state = state_.lock()) state->notify_if_idle();
  }

  void abandon(json error_response) {
    if (done_) return;
    complete(std::move(error_response));
  }

 private:
  void complete(json response) {
    auto self = shared_from_this();
    done_ = true;
    detach();
    reply_(std::move(response));
    if (auto state = state_.lock()) state->notify_if_idle();
  }

  void detach() {
    if (auto state = state_.lock()) state->calls.erase(key_);
  }

  std::weak_ptr<SessionState> state_;
  json id_;
  std::string key_;
  json arguments_;
  std::optional<json> token_;
  Reply reply_;
  bool done_ = false;
  bool cancel_requested_ = false;
  std::optional<double> last_progress_;
  std::vector<std::function<void()>> hooks_;
};

namespace {

// Collects the responses of one batch and sends them as one array once all are in.
struct Batch {
  std::weak_ptr<SessionState> state;
  json responses = json::array();
  std::size_t pending = 0;
  bool sealed = false;
  bool sent = false;

  void settle(std::optional<json> response) {
    if (response) responses.push_back(std::move(*response));
    --pending;
    maybe_send();
  }
  void maybe_send() {
    if (!sealed || pending != 0 || sent) return;
    sent = true;
    // A batch of only notifications (or only cancelled requests) gets no response at all.
    if (responses.empty()) return;
    if (auto s = state.lock()) s->send(responses);
  }
};

json params_of(const json& message) {
  const auto it = message.find("params");
  if (it == message.end() || it->is_null()) return json::object();
  return *it;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

Reply SessionState::direct_reply() {
  return [weak = weak_from_this()](std::optional<json> response) {
    if (!response) return;
    if (auto state = weak.lock()) state->send(*response);
  };
}

void SessionState::dispatch(const json& message, const Reply& reply) {
  const auto msg = rpc::classify(message);
  try {
    switch (msg.kind) {
      case rpc::Kind::invalid:
        reply(rpc::error_response(msg.id, rpc::kInvalidRequest, "Invalid Request: " + msg.problem));
        return;
      case rpc::Kind::response:
        // This server sends no requests, so there is nothing to match a response to.
        spdlog::debug("mcp: ignoring a response message from the client");
        reply(std::nullopt);
        return;
      case rpc::Kind::notification:
        handle_notification(msg.method, params_of(message));
        reply(std::nullopt);
        return;
      case rpc::Kind::request:
        handle_request(*msg.id, msg.method, params_of(message), reply);
        return;
    }
  } catch (const std::exception& e) {
    // Only reachable through a bug; the client still gets an answer.
    spdlog::error("mcp: internal error handling {}: {}", msg.method, e.what());
    if (msg.kind == rpc::Kind::request) {
      reply(rpc::error_response(msg.id, rpc::kInternalError,
                                std::string("Internal error: ") + e.what()));
    } else {
      reply(std::nullopt);
    }
  }
}

void SessionState::dispatch_batch(const json& batch) {
  if (version != "2025-03-26") {
    const std::string negotiated = version.empty() ? "none yet" : version;
    send(rpc::error_response(std::nullopt, rpc::kInvalidRequest,
                             "Invalid Request: JSON-RPC batches are only accepted with protocol "
                             "version 2025-03-26 (negotiated: " + negotiated +
                             "); send one message per line"));
    return;
  }
  if (batch.empty()) {
    send(rpc::error_response(std::nullopt, rpc::kInvalidRequest, "Invalid Request: empty batch"));
    return;
  }
  auto collector = std::make_shared<Batch>();
  collector->state = weak_from_this();
  collector->pending = batch.size();
  for (const auto& element : batch) {
    dispatch(element, [collector](std::optional<json> response) {
      collector->settle(std::move(response));
    });
  }
  collector->sealed = true;
  collector->maybe_send();
}

void SessionState::handle_request(const json& id, const std::string& method, const json& params,
                                  const Reply& reply) {
  if (method == "ping") {
    reply(rpc::result_response(id, json::object()));
    return;
  }
  if (method == "initialize") {
    initialize(id, params, reply);
    return;
  }
  if (method == "server/discover") {
    // Probing clients (2026-07-28 drafts) fall back to initialize at once on this error.
    reply(rpc::error_response(id, rpc::kMethodNotFound,
                              "Method not found: server/discover. This server speaks MCP "
                              "2024-11-05 to 2025-11-25; start the session with initialize"));
    return;
  }
  if (!initialized) {
    reply(rpc::error_response(id, rpc::kInvalidRequest,
                              "Invalid Request: the session is not initialized; send initialize "
                              "first (only ping is answered before it)"));
    return;
  }
  if (!accepting) {
    reply(rpc::error_response(id, rpc::kInternalError,
                              "The server is shutting down and accepts no new requests"));
    return;
  }
  if (!params.is_object()) {
    reply(rpc::error_response(id, rpc::kInvalidParams, "Invalid params: params must be an object"));
    return;
  }
  if (method == "tools/list") {
    const auto cursor = params.find("cursor");
    if (cursor != params.end() && !cursor->is_null()) {
      reply(rpc::error_response(id, rpc::kInvalidParams,
                                "Invalid params: unknown cursor (tools/list has a single page)"));
      return;
    }
    reply(rpc::result_response(id, tools.list()));
    return;
  }
  if (method == "tools/call") {
    call_tool(id, params, reply);
    return;
  }
  if (method == "logging/setLevel") {
    const auto level = params.find("level");
    std::optional<LogLevel> parsed;
    if (level != params.end() && level->is_string()) parsed = parse_log_level(level->get<std::string>());
    if (!parsed) {
      reply(rpc::error_response(id, rpc::kInvalidParams,
                                "Invalid params: \"level\" must be one of debug, info, notice, "
                                "warning, error, critical, alert, emergency"));
      return;
    }
    log_level = *parsed;
    reply(rpc::result_response(id, json::object()));
    return;
  }
  reply(rpc::error_response(id, rpc::kMethodNotFound, "Method not found: " + method));
}

void SessionState::initialize(const json& id, const json& params, const Reply& reply) {
  if (initialized) {
    reply(rpc::error_response(id, rpc::kInvalidRequest,
                              "Invalid Request: the session is already initialized"));
    return;
  }
  const auto requested = params.is_object() ? params.find("protocolVersion") : params.end();
  if (!params.is_object() || requested == params.end() || !requested->is_string()) {
    reply(rpc::error_response(id, rpc::kInvalidParams,
                              "Invalid params: initialize needs \"protocolVersion\" (a string)"));
    return;
  }
  version = std::string(negotiate_protocol_version(requested->get<std::string>()));
  json result = {
      {"protocolVersion", version},
      {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
      {"serverInfo",
       {{"name", kServerName}, {"title", kServerTitle}, {"version", server_version()}}},
  };
  if (!options.instructions.empty()) result["instructions"] = options.instructions;
  initialized = true;
  reply(rpc::result_response(id, std::move(result)));
  spdlog::debug("mcp: initialized, protocol {}", version);
  if (on_initialized) on_initialized();
}

void SessionState::call_tool(const json& id, const json& params, const Reply& reply) {
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    reply(rpc::error_response(id, rpc::kInvalidParams,
                              "Invalid params: tools/call needs \"name\" (a string)"));
    return;
  }
  const auto tool_name = name->get<std::string>();
  const ToolDefinition* tool = tools.find(tool_name);
  if (tool == nullptr) {
    reply(rpc::error_response(id, rpc::kInvalidParams,
                              "Unknown tool: " + tool_name + " (available: " +
                                  joined(tools.names()) + ")"));
    return;
  }
  json arguments = json::object();
  if (const auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
    if (!args->is_object()) {
      reply(rpc::error_response(id, rpc::kInvalidParams,
                                "Invalid params: \"arguments\" must be an object"));
      return;
    }
    arguments = *args;
  }
  std::optional<json> token;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (const auto t = meta->find("progressToken"); t != meta->end() && rpc::is_valid_id(*t)) {
      token = *t;
    }
  }
  std::string key = id.dump();
  if (calls.count(key) != 0) {
    reply(rpc::error_response(id, rpc::kInvalidRequest,
                              "Invalid Request: id " + key + " is already used by a request "
                              "in flight"));
    return;
  }
  auto call = std::make_shared<CallImpl>(weak_from_this(), id, key, std::move(arguments),
                                         std::move(token), reply);
  calls.emplace(std::move(key), call);
  try {
    tool->handler(call);
  } catch (const std::exception& e) {
    spdlog::error("mcp: tool {} failed: {}", tool_name, e.what());
    call->finish({{"content", json::array({{{"type", "text"},
                                           {"text", "Internal error in " + tool_name + ": " +
                                                        e.what()}}})},
                  {"isError", true}});
  }
}

void SessionState::handle_notification(const std::string& method, const json& params) {
  if (method == "notifications/cancelled") {
    if (!params.is_object()) return;
    const auto request_id = params.find("requestId");
    if (request_id == params.end() || !rpc::is_valid_id(*request_id)) return;
    const auto it = calls.find(request_id->dump());
    if (it == calls.end()) return;  // already answered, or never known: nothing to do
    auto call = it->second;
    spdlog::debug("mcp: request {} cancelled by the client", request_id->dump());
    call->suppress();
    call->request_cancel();
    return;
  }
  if (method == "notifications/initialized") return;
  spdlog::debug("mcp: ignoring notification {}", method);
}

void SessionState::log(LogLevel level, json data) {
  if (!initialized || level < log_level) return;
  send(rpc::notification("notifications/message", {{"level", to_string(level)},
                                                   {"logger", options.logger_name},
                                                   {"data", std::move(data)}}));
}

}  // namespace detail

Session::Session(const ToolRegistry& tools, SessionOptions options, Sink sink)
    : state_(std::make_shared<detail::SessionState>(tools, std::move(options), std::move(sink))) {}

Session::~Session() = default;

void Session::handle_line(std::string_view line) {
  auto parsed = rpc::parse(line);
  if (!parsed) {
    state_->send(rpc::error_response(std::nullopt, rpc::kParseError,
                                     "Parse error: the line is not valid JSON"));
    return;
  }
  if (parsed->is_array()) {
    state_->dispatch_batch(*parsed);
    return;
  }
  state_->dispatch(*parsed, state_->direct_reply());
}

void Session::handle_oversize(const OversizeLine& line) {
  spdlog::warn("mcp: discarded a message of {} bytes (limit {})", line.bytes, line.limit);
  state_->send(rpc::error_response(
      line.id, rpc::kInvalidRequest,
      "Invalid Request: message of " + std::to_string(line.bytes) + " bytes exceeds the limit of " +
          std::to_string(line.limit) + " bytes per line and was discarded"));
}

void Session::set_on_initialized(std::function<void()> callback) {
  state_->on_initialized = std::move(callback);
}

void Session::log(LogLevel level, nlohmann::json data) { state_->log(level, std::move(data)); }

bool Session::wants_log(LogLevel level) const {
  return state_->initialized && level >= state_->log_level;
}

bool Session::initialized() const { return state_->initialized; }

const std::string& Session::protocol_version() const { return state_->version; }

std::size_t Session::calls_in_flight() const { return state_->calls.size(); }

void Session::when_idle(std::function<void()> callback) {
  state_->idle_waiters.push_back(std::move(callback));
  state_->notify_if_idle();
}

void Session::stop_accepting_and_cancel() {
  state_->accepting = false;
  std::vector<std::shared_ptr<detail::CallImpl>> calls;
  for (const auto& [key, call] : state_->calls) calls.push_back(call);
  for (const auto& call : calls) call->request_cancel();
}

void Session::abandon_in_flight(const std::string& reason) {
  std::vector<std::pair<json, std::shared_ptr<detail::CallImpl>>> calls;
  for (const auto& [key, call] : state_->calls) calls.emplace_back(json::parse(key), call);
  for (auto& [id, call] : calls) {
    call->abandon(rpc::error_response(id, rpc::kInternalError, reason));
  }
}

}  // namespace mcp
