#include "mcp/legacy_session.h"

#include <deque>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "mcp/era.h"
#include "mcp/intake.h"
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
  std::function<void(std::ptrdiff_t)> batch_held;
  std::vector<std::weak_ptr<Batch>> batches;  // with calls not started yet

  void dispatch(const json& message, const Outlet& outlet, const CallOptions& base);
  void handle_request(const json& id, const std::string& method, const json& params,
                      const Outlet& outlet, const CallOptions& base);
  void initialize(const json& id, const json& params, const Outlet& outlet);
  CallOptions call_options(const json& params, const CallOptions& base);
  // Starts the queued calls of `batch` that may start now, refuses those that never can.
  void pump(const std::shared_ptr<Batch>& batch);
  bool cancel_queued(const std::string& id_key);
};

namespace {

json params_of(const json& message) {
  const auto it = message.find("params");
  if (it == message.end() || it->is_null()) return json::object();
  return *it;
}

}  // namespace

// Collects the responses of one batch and sends them as one array once all are in. Its
// tools/call requests wait in `queued` and start as next_batch_call (mcp/intake.h) allows.
struct LegacySession::Batch {
  json responses = json::array();
  std::size_t pending = 0;
  bool sealed = false;
  bool sent = false;
  std::function<void(std::optional<json>)> reply;
  std::function<void(json)> notify;
  std::function<void(std::ptrdiff_t)> held;  // may be empty
  CallOptions base;
  std::size_t held_bytes = 0;
  std::deque<json> queued;  // tools/call requests not started yet
  std::size_t running = 0;
  bool pumping = false;
  bool pump_again = false;

  void settle(std::optional<json> response) {
    if (response) {
      const std::size_t bytes = rpc::serialize(*response).size();
      held_bytes += bytes;
      if (held) held(static_cast<std::ptrdiff_t>(bytes));
      responses.push_back(std::move(*response));
    }
    --pending;
    maybe_send();
  }
  void maybe_send() {
    if (!sealed || pending != 0 || sent) return;
    sent = true;
    if (held && held_bytes != 0) held(-static_cast<std::ptrdiff_t>(held_bytes));
    held_bytes = 0;
    // A batch of only notifications (or only cancelled requests) gets no response at all.
    if (responses.empty()) {
      reply(std::nullopt);
    } else {
      reply(std::move(responses));
    }
  }
  // A queued call cancelled before it started: like a cancelled request, it gets no response.
  bool drop_queued(const std::string& id_key) {
    for (auto it = queued.begin(); it != queued.end(); ++it) {
      if ((*it)["id"].dump() != id_key) continue;
      queued.erase(it);
      settle(std::nullopt);
      return true;
    }
    return false;
  }
};

namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

json batch_refusal(const json& id, std::size_t held_bytes, std::size_t reply_bound, std::size_t max_bytes) {
  return rpc::error_response(
      id, rpc::kServerBusy,
      "Request refused: the replies of this batch already take " + mib(held_bytes) +
          " and this call may add up to " + mib(reply_bound) + " (its bound under --max-output-bytes, "
          "--max-images and --max-output-file-bytes), past the " + mib(max_bytes) +
          " one client's replies may hold; nothing of it ran. Send it again in another message");
}

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
              (calls.cancel(request_id->dump()) || cancel_queued(request_id->dump()))) {
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
  collector->notify = outlet.notify;
  collector->held = state_->batch_held;
  collector->base = base;
  // Registered first: a cancellation later in the batch reaches a call queued before it.
  state_->batches.push_back(collector);
  for (const auto& element : batch) {
    if (calls_started(element) == 1) {
      collector->queued.push_back(element);
      continue;
    }
    state_->dispatch(element,
                     Outlet{outlet.notify,
                            [collector](std::optional<json> response) {
                              collector->settle(std::move(response));
                            }},
                     base);
  }
  collector->sealed = true;
  state_->pump(collector);
  collector->maybe_send();
}

void LegacySession::State::pump(const std::shared_ptr<Batch>& batch) {
  if (batch->pumping) {
    batch->pump_again = true;
    return;
  }
  batch->pumping = true;
  do {
    batch->pump_again = false;
    while (!batch->queued.empty()) {
      const auto next = next_batch_call(batch->held_bytes, batch->running, options.batch_reply_bound,
                                        options.batch_max_bytes);
      if (next == BatchCall::wait) break;
      json call = std::move(batch->queued.front());
      batch->queued.pop_front();
      if (next == BatchCall::refuse) {
        spdlog::warn("mcp: refused a call of a batch whose replies hold {} bytes", batch->held_bytes);
        batch->settle(batch_refusal(call["id"], batch->held_bytes, options.batch_reply_bound,
                                    options.batch_max_bytes));
        continue;
      }
      ++batch->running;
      dispatch(call,
               Outlet{batch->notify,
                      [batch, weak = weak_from_this()](std::optional<json> response) {
                        --batch->running;
                        batch->settle(std::move(response));
                        if (auto state = weak.lock()) {
                          state->pump(batch);
                          return;
                        }
                        // The session ended: what never started is not answered.
                        while (!batch->queued.empty()) {
                          batch->queued.pop_front();
                          batch->settle(std::nullopt);
                        }
                      }},
               batch->base);
    }
  } while (batch->pump_again);
  batch->pumping = false;
  if (batch->queued.empty()) {
    std::erase_if(batches, [&](const std::weak_ptr<Batch>& b) {
      const auto live = b.lock();
      return !live || live == batch;
    });
  }
}

bool LegacySession::State::cancel_queued(const std::string& id_key) {
  for (const auto& weak : batches) {
    if (auto batch = weak.lock(); batch && batch->drop_queued(id_key)) return true;
  }
  return false;
}

void LegacySession::set_on_initialized(std::function<void()> callback) {
  state_->on_initialized = std::move(callback);
}

void LegacySession::set_batch_held(std::function<void(std::ptrdiff_t)> held) {
  state_->batch_held = std::move(held);
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
