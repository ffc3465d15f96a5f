#include "mcp/legacy_session.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/era.h"
#include "mcp/jsonrpc.h"

namespace mcp {

using json = nlohmann::json;
namespace rpc = jsonrpc;

struct LegacySession::State : std::enable_shared_from_this<LegacySession::State> {
  State(const ToolRegistry& tool_registry, SessionOptions opts, CallTable& table)
      : tools(tool_registry), options(std::move(opts)), calls(table), log_level(options.log_level) {}

  const ToolRegistry& tools;
  SessionOptions options;
  CallTable& calls;
  std::function<void()> on_initialized;
  std::function<void(json)> unrelated;
  std::string version;  // negotiated; "" before initialize
  bool initialized = false;
  bool accepting = true;
  LogLevel log_level;

  void dispatch(const json& message, const Outlet& outlet, const CallOptions& base);
  void handle_request(const json& id, const std::string& method, const json& params,
                      const Outlet& outlet, const CallOptions& base);
  void initialize(const json& id, const json& params, const Outlet& outlet);
  CallOptions call_options(const json& params, const CallOptions& base);
};

namespace {

json params_of(const json& message) {
  const auto it = message.find("params");
  if (it == message.end() || it->is_null()) return json::object();
  return *it;
}

// Collects the responses of one batch and sends them as one array once all are in.
struct Batch {
  json responses = json::array();
  std::size_t pending = 0;
  bool sealed = false;
  bool sent = false;
  std::function<void(std::optional<json>)> reply;

  void settle(std::optional<json> response) {
    if (response) responses.push_back(std::move(*response));
    --pending;
    maybe_send();
  }
  void maybe_send() {
    if (!sealed || pending != 0 || sent) return;
    sent = true;
    // A batch of only notifications (or only cancelled requests) gets no response at all.
    if (responses.empty()) {
      reply(std::nullopt);
    } else {
      reply(std::move(responses));
    }
  }
};

}  // namespace

void LegacySession::State::dispatch(const json& message, const Outlet& outlet,
                                    const CallOptions& base) {
  const auto msg = rpc::classify(message);
  try {
    switch (msg.kind) {
      case rpc::Kind::invalid:
        outlet.done(rpc::error_response(msg.id, rpc::kInvalidRequest, "Invalid Request: " + msg.problem));
        return;
      case rpc::Kind::response:
        // This server sends no requests, so there is nothing to match a response to.
        spdlog::debug("mcp: ignoring a response message from the client");
        outlet.done(std::nullopt);
        return;
      case rpc::Kind::notification: {
        const json params = params_of(message);
        if (msg.method == "notifications/cancelled" && params.is_object()) {
          const auto request_id = params.find("requestId");
          if (request_id != params.end() && rpc::is_valid_id(*request_id) &&
              calls.cancel(request_id->dump())) {
            spdlog::debug("mcp: request {} cancelled by the client", request_id->dump());
          }
        } else if (msg.method != "notifications/initialized") {
          spdlog::debug("mcp: ignoring notification {}", msg.method);
        }
        outlet.done(std::nullopt);
        return;
      }
      case rpc::Kind::request:
        handle_request(*msg.id, msg.method, params_of(message), outlet, base);
        return;
    }
  } catch (const std::exception& e) {
    // Only reachable through a bug; the client still gets an answer.
    spdlog::error("mcp: internal error handling {}: {}", msg.method, e.what());
    if (msg.kind == rpc::Kind::request) {
      outlet.done(rpc::error_response(msg.id, rpc::kInternalError,
                                      std::string("Internal error: ") + e.what()));
    } else {
      outlet.done(std::nullopt);
    }
  }
}

CallOptions LegacySession::State::call_options(const json& params, const CallOptions& base) {
  CallOptions call = base;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (const auto t = meta->find("progressToken"); t != meta->end() && rpc::is_valid_id(*t)) {
      call.progress_token = *t;
    }
  }
  // "message" exists in progress notifications from 2025-03-26 on.
  call.progress_message = version >= "2025-03-26";
  call.wants_log = [weak = weak_from_this()](LogLevel level) {
    auto state = weak.lock();
    return state && state->initialized && level >= state->log_level;
  };
  call.logger_name = options.logger_name;
  return call;
}

void LegacySession::State::handle_request(const json& id, const std::string& method,
                                          const json& params, const Outlet& outlet,
                                          const CallOptions& base) {
  auto reply = [&](json response) { outlet.done(std::move(response)); };
  if (method == "ping") {
    reply(rpc::result_response(id, json::object()));
    return;
  }
  if (method == "initialize") {
    initialize(id, params, outlet);
    return;
  }
  if (!initialized) {
    reply(rpc::error_response(id, rpc::kInvalidRequest,
                              "Invalid Request: the session is not initialized; send initialize "
                              "first (only ping is answered before it), or give the request the "
                              "per-request _meta of protocol " +
                                  std::string(kStatelessProtocolVersion)));
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
    calls.call_tool(tools, id, id.dump(), params, call_options(params, base), outlet);
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

void LegacySession::State::initialize(const json& id, const json& params, const Outlet& outlet) {
  if (initialized) {
    outlet.done(rpc::error_response(id, rpc::kInvalidRequest,
                                    "Invalid Request: the session is already initialized"));
    return;
  }
  const auto requested = params.is_object() ? params.find("protocolVersion") : params.end();
  if (!params.is_object() || requested == params.end() || !requested->is_string()) {
    outlet.done(rpc::error_response(id, rpc::kInvalidParams,
                                    "Invalid params: initialize needs \"protocolVersion\" (a string)"));
    return;
  }
  version = std::string(negotiate_protocol_version(requested->get<std::string>()));
  json result = {
      {"protocolVersion", version},
      {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
      {"serverInfo", server_implementation()},
  };
  if (!options.instructions.empty()) result["instructions"] = options.instructions;
  initialized = true;
  outlet.done(rpc::result_response(id, std::move(result)));
  spdlog::debug("mcp: initialized, protocol {}", version);
  if (on_initialized) on_initialized();
}

LegacySession::LegacySession(const ToolRegistry& tools, SessionOptions options, CallTable& calls)
    : state_(std::make_shared<State>(tools, std::move(options), calls)) {}

LegacySession::~LegacySession() = default;

void LegacySession::handle(const json& message, const Outlet& outlet, const CallOptions& base) {
  state_->dispatch(message, outlet, base);
}

void LegacySession::handle_batch(const json& batch, const Outlet& outlet, const CallOptions& base) {
  const auto& version = state_->version;
  if (version != "2025-03-26") {
    const std::string negotiated = version.empty() ? "none yet" : version;
    outlet.done(rpc::error_response(std::nullopt, rpc::kInvalidRequest,
                                    "Invalid Request: JSON-RPC batches are only accepted with "
                                    "protocol version 2025-03-26 (negotiated: " + negotiated +
                                        "); send one message at a time"));
    return;
  }
  if (batch.empty()) {
    outlet.done(rpc::error_response(std::nullopt, rpc::kInvalidRequest, "Invalid Request: empty batch"));
    return;
  }
  auto collector = std::make_shared<Batch>();
  collector->pending = batch.size();
  collector->reply = outlet.done;
  for (const auto& element : batch) {
    state_->dispatch(element,
                     Outlet{outlet.notify,
                            [collector](std::optional<json> response) {
                              collector->settle(std::move(response));
                            }},
                     base);
  }
  collector->sealed = true;
  collector->maybe_send();
}

void LegacySession::set_on_initialized(std::function<void()> callback) {
  state_->on_initialized = std::move(callback);
}

void LegacySession::set_unrelated_sink(std::function<void(json)> sink) {
  state_->unrelated = std::move(sink);
}

void LegacySession::log(LogLevel level, json data) {
  if (!state_->unrelated || !wants_log(level)) return;
  state_->unrelated(rpc::notification("notifications/message",
                                      {{"level", to_string(level)},
                                       {"logger", state_->options.logger_name},
                                       {"data", std::move(data)}}));
}

bool LegacySession::wants_log(LogLevel level) const {
  return state_->initialized && level >= state_->log_level;
}

bool LegacySession::initialized() const { return state_->initialized; }

const std::string& LegacySession::protocol_version() const { return state_->version; }

void LegacySession::stop_accepting() { state_->accepting = false; }

}  // namespace mcp
