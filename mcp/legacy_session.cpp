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
  // Batches not answered yet, in arrival order; what they hold (serialized replies) and how
  // many of their calls run, over all of them.
  std::vector<std::shared_ptr<Batch>> batches;
  std::size_t batch_bytes = 0;
  std::size_t batch_running = 0;
  bool pumping = false;
  bool pump_again = false;
  std::function<void(std::ptrdiff_t)> batch_held;  // the owner told of each change of batch_bytes
  std::function<std::size_t()> client_bytes;       // the client's unread replies, batches' included

  void dispatch(const json& message, const Outlet& outlet, const CallOptions& base);
  void handle_request(const json& id, const std::string& method, const json& params,
                      const Outlet& outlet, const CallOptions& base);
  void initialize(const json& id, const json& params, const Outlet& outlet);
  CallOptions call_options(const json& params, const CallOptions& base);
  // Starts the batches' queued calls that may start now (mcp/intake.h next_batch_call: what the
  // client has not read, and the batches' running calls, within the bound), refuses those that
  // never can, sends each batch whose last response came.
  void pump();
  void settle(Batch& batch, std::optional<json> response);
  bool cancel_queued(const std::string& id_key);
  std::size_t unread_bytes() const { return client_bytes ? client_bytes() : batch_bytes; }
};

namespace {

json params_of(const json& message) {
  const auto it = message.find("params");
  if (it == message.end() || it->is_null()) return json::object();
  return *it;
}

}  // namespace

// The responses of one batch, serialized as they come (a reply's tree takes several times its
// text), sent as one array once all are in. Its tools/call requests wait in `queued` until the
// session's pump starts them.
struct LegacySession::Batch {
  std::vector<std::string> responses;
  std::size_t bytes = 0;  // of `responses`
  std::size_t pending = 0;
  bool sealed = false;
  bool sent = false;
  std::function<void(std::optional<std::string>)> reply;
  std::function<void(json)> notify;
  CallOptions base;
  std::deque<json> queued;  // tools/call requests not started yet

  bool complete() const { return sealed && pending == 0 && !sent; }
  // A response after the session is gone: what never started is dropped, and the batch is
  // answered with what it has once its running calls are in.
  void settle_orphaned(std::optional<json> response) {
    if (response) responses.push_back(rpc::serialize(*response));
    --pending;
    pending -= queued.size();
    queued.clear();
    if (!complete()) return;
    sent = true;
    reply(text());
  }
  std::optional<std::string> text() {
    // A batch of only notifications (or only cancelled requests) gets no response at all.
    if (responses.empty()) return std::nullopt;
    std::string out;
    out.reserve(bytes + responses.size() + 1);
    out += '[';
    for (std::size_t i = 0; i < responses.size(); ++i) {
      if (i != 0) out += ',';
      out += responses[i];
      std::string().swap(responses[i]);
    }
    out += ']';
    return out;
  }
};

namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

json batch_refusal(const json& id, std::size_t unread, std::size_t reply_bound, std::size_t max_bytes) {
  return rpc::error_response(
      id, rpc::kServerBusy,
      "Request refused: replies this client has not read yet (its batches' among them) take " + mib(unread) +
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

void LegacySession::handle_batch(const json& batch, const BatchOutlet& outlet, const CallOptions& base) {
  const auto& version = state_->version;
  auto refuse = [&](const std::string& message) {
    outlet.done(rpc::serialize(rpc::error_response(std::nullopt, rpc::kInvalidRequest, message)));
  };
  if (version != "2025-03-26") {
    const std::string negotiated = version.empty() ? "none yet" : version;
    refuse("Invalid Request: JSON-RPC batches are only accepted with protocol version 2025-03-26 "
           "(negotiated: " + negotiated + "); send one message at a time");
    return;
  }
  if (batch.empty()) {
    refuse("Invalid Request: empty batch");
    return;
  }
  auto collector = std::make_shared<Batch>();
  collector->pending = batch.size();
  collector->reply = outlet.done;
  collector->notify = outlet.notify;
  collector->base = base;
  // Registered first: a cancellation later in the batch reaches a call queued before it.
  state_->batches.push_back(collector);
  std::weak_ptr<State> weak = state_;
  for (const auto& element : batch) {
    if (calls_started(element) == 1) {
      collector->queued.push_back(element);
      continue;
    }
    state_->dispatch(element,
                     Outlet{outlet.notify,
                            [collector, weak](std::optional<json> response) {
                              if (auto state = weak.lock()) {
                                state->settle(*collector, std::move(response));
                              } else {
                                collector->settle_orphaned(std::move(response));
                              }
                            }},
                     base);
  }
  collector->sealed = true;
  state_->pump();
}

void LegacySession::State::settle(Batch& batch, std::optional<json> response) {
  if (response) {
    std::string text = rpc::serialize(*response);
    batch.bytes += text.size();
    batch_bytes += text.size();
    if (batch_held) batch_held(static_cast<std::ptrdiff_t>(text.size()));
    batch.responses.push_back(std::move(text));
  }
  --batch.pending;
  pump();  // (within the pump: it goes round once more, and sends the batch if it is complete)
}

void LegacySession::State::pump() {
  if (pumping) {
    pump_again = true;
    return;
  }
  pumping = true;
  do {
    pump_again = false;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const auto batch = batches[b];
      while (!batch->queued.empty()) {
        const std::size_t unread = unread_bytes();
        const auto next = next_batch_call(unread, batch_running, options.batch_reply_bound, options.batch_max_bytes);
        if (next == BatchCall::wait) break;
        json call = std::move(batch->queued.front());
        batch->queued.pop_front();
        if (next == BatchCall::refuse) {
          spdlog::warn("mcp: refused a call of a batch: the client's unread replies take {} bytes", unread);
          settle(*batch, batch_refusal(call["id"], unread, options.batch_reply_bound, options.batch_max_bytes));
          continue;
        }
        ++batch_running;
        dispatch(call,
                 Outlet{batch->notify,
                        [batch, weak = weak_from_this()](std::optional<json> response) {
                          if (auto state = weak.lock()) {
                            --state->batch_running;
                            state->settle(*batch, std::move(response));
                          } else {
                            batch->settle_orphaned(std::move(response));
                          }
                        }},
                 batch->base);
      }
    }
    // Answered batches go, each once its last response came.
    for (std::size_t b = 0; b < batches.size();) {
      if (!batches[b]->complete()) {
        ++b;
        continue;
      }
      const auto batch = batches[b];
      batches.erase(batches.begin() + static_cast<std::ptrdiff_t>(b));
      batch->sent = true;
      batch_bytes -= batch->bytes;
      if (batch_held && batch->bytes != 0) batch_held(-static_cast<std::ptrdiff_t>(batch->bytes));
      batch->reply(batch->text());
      pump_again = true;  // room made: other batches' calls may start
    }
  } while (pump_again);
  pumping = false;
}

bool LegacySession::State::cancel_queued(const std::string& id_key) {
  for (const auto& batch : batches) {
    for (auto it = batch->queued.begin(); it != batch->queued.end(); ++it) {
      if ((*it)["id"].dump() != id_key) continue;
      batch->queued.erase(it);
      settle(*batch, std::nullopt);  // like any cancelled request: no response
      return true;
    }
  }
  return false;
}

void LegacySession::end() {
  state_->accepting = false;
  // What never started is not started now; the running calls are the owner's to cancel.
  for (const auto& batch : state_->batches) {
    while (!batch->queued.empty()) {
      batch->queued.pop_front();
      --batch->pending;
    }
  }
  state_->pump();
}

void LegacySession::set_on_initialized(std::function<void()> callback) {
  state_->on_initialized = std::move(callback);
}

void LegacySession::set_batch_held(std::function<void(std::ptrdiff_t)> held) {
  state_->batch_held = std::move(held);
}

std::size_t LegacySession::batch_bytes() const { return state_->batch_bytes; }

void LegacySession::set_client_bytes(std::function<std::size_t()> unread) {
  state_->client_bytes = std::move(unread);
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
