#include "mcp/session.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/intake.h"
#include "mcp/jsonrpc.h"

namespace mcp {

using json = nlohmann::json;
namespace rpc = jsonrpc;

Session::Session(const ToolRegistry& tools, SessionOptions options, Sink sink)
    : sink_(std::make_shared<Sink>(std::move(sink))),
      legacy_(tools, options, calls_),
      stateless_(tools, options.instructions, options.logger_name) {
  legacy_.set_unrelated_sink([this](json message) { send(message); });
}

Session::~Session() = default;

void Session::send(const json& message) { (*sink_)(rpc::serialize(message)); }

Outlet Session::outlet() {
  std::weak_ptr<Sink> weak = sink_;
  return Outlet{[weak](json notification) {
                  if (auto sink = weak.lock()) (*sink)(rpc::serialize(notification));
                },
                [weak](std::optional<json> response) {
                  if (!response) return;
                  if (auto sink = weak.lock()) (*sink)(rpc::serialize(*response));
                }};
}

void Session::handle_line(std::string_view line) { handle_parsed(rpc::parse(line), line.size()); }

void Session::handle_parsed(std::optional<json> parsed, std::size_t line_bytes) {
  if (!parsed) {
    send(rpc::error_response(std::nullopt, rpc::kParseError, "Parse error: the line is not valid JSON"));
    return;
  }
  CallOptions base;
  base.reserve_bytes = call_share_bytes(reply_bound_, line_bytes);
  if (parsed->is_array()) {
    std::weak_ptr<Sink> weak = sink_;
    legacy_.handle_batch(*parsed,
                         LegacySession::BatchOutlet{outlet().notify,
                                                    [weak](std::optional<std::string> text) {
                                                      if (!text) return;
                                                      if (auto sink = weak.lock()) (*sink)(std::move(*text));
                                                    }},
                         base);
    return;
  }
  const auto msg = rpc::classify(*parsed);
  if (msg.kind == rpc::Kind::request) {
    const auto it = parsed->find("params");
    const json params = it == parsed->end() || it->is_null() ? json::object() : *it;
    if (is_stateless_request(msg.method, params)) {
      try {
        stateless_.handle(*msg.id, msg.method, params, calls_, msg.id->dump(), base, outlet());
      } catch (const std::exception& e) {
        spdlog::error("mcp: internal error handling {}: {}", msg.method, e.what());
        send(rpc::error_response(msg.id, rpc::kInternalError, std::string("Internal error: ") + e.what()));
      }
      return;
    }
  }
  legacy_.handle(*parsed, outlet(), base);
}

void Session::handle_oversize(const OversizeLine& line) {
  spdlog::warn("mcp: discarded a message of {} bytes (limit {})", line.bytes, line.limit);
  send(rpc::error_response(
      line.id, rpc::kInvalidRequest,
      "Invalid Request: message of " + std::to_string(line.bytes) + " bytes exceeds the limit of " +
          std::to_string(line.limit) + " bytes per line and was discarded"));
}

void Session::set_on_initialized(std::function<void()> callback) {
  legacy_.set_on_initialized(std::move(callback));
}

void Session::log(LogLevel level, json data) { legacy_.log(level, std::move(data)); }

bool Session::wants_log(LogLevel level) const { return legacy_.wants_log(level); }

bool Session::initialized() const { return legacy_.initialized(); }

const std::string& Session::protocol_version() const { return legacy_.protocol_version(); }

std::size_t Session::calls_in_flight() const { return calls_.size(); }

std::size_t Session::reserved_bytes() const { return calls_.reserved_bytes(); }

void Session::set_on_call_ended(std::function<void()> hook) { calls_.set_on_call_ended(std::move(hook)); }

void Session::when_idle(std::function<void()> callback) { calls_.when_empty(std::move(callback)); }

void Session::stop_accepting_and_cancel() {
  legacy_.stop_accepting();
  stateless_.stop_accepting();
  calls_.cancel_all();
}

void Session::abandon_in_flight(const std::string& reason) { calls_.abandon_all(reason); }

}  // namespace mcp
