#include "mcp/stateless_handler.h"

#include <utility>

#include "mcp/jsonrpc.h"

namespace mcp {

using json = nlohmann::json;
namespace rpc = jsonrpc;

namespace {

json refusal_response(const json& id, const Refusal& refusal) {
  return rpc::error_response(id, refusal.code, refusal.message, refusal.data);
}

}  // namespace

StatelessHandler::StatelessHandler(const ToolRegistry& tools, std::string instructions,
                                   std::string logger_name)
    : tools_(tools), instructions_(std::move(instructions)), logger_name_(std::move(logger_name)) {}

void StatelessHandler::handle(const json& id, const std::string& method, const json& params,
                              CallTable& calls, std::string key, const CallOptions& base,
                              const Outlet& outlet) const {
  RequestMeta meta;
  if (auto refusal = read_request_meta(params, meta)) {
    outlet.done(refusal_response(id, *refusal));
    return;
  }
  if (auto refusal = check_protocol_version(meta.protocol_version)) {
    outlet.done(refusal_response(id, *refusal));
    return;
  }
  dispatch(id, method, params, meta, calls, std::move(key), base, outlet);
}

json StatelessHandler::discover_result() const {
  json versions = json::array();
  for (auto v : kAllProtocolVersions) versions.push_back(v);
  json result = {
      {"supportedVersions", std::move(versions)},
      {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
      {"ttlMs", kListTtlMs},
      {"cacheScope", "public"},
  };
  if (!instructions_.empty()) result["instructions"] = instructions_;
  mark_stateless_result(result);
  return result;
}

void StatelessHandler::dispatch(const json& id, const std::string& method, const json& params,
                                const RequestMeta& meta, CallTable& calls, std::string key,
                                const CallOptions& base, const Outlet& outlet) const {
  if (method == "server/discover") {
    outlet.done(rpc::result_response(id, discover_result()));
    return;
  }
  if (method != "tools/list" && method != "tools/call") {
    std::string message = "Method not found: " + method;
    if (method == "initialize" || method == "ping" || method == "logging/setLevel") {
      message += " (not part of protocol " + std::string(kStatelessProtocolVersion) +
                 "; a request without the per-request _meta selects the initialize era)";
    }
    outlet.done(rpc::error_response(id, rpc::kMethodNotFound, std::move(message)));
    return;
  }
  if (!accepting_) {
    outlet.done(rpc::error_response(id, rpc::kInternalError,
                                    "The server is shutting down and accepts no new requests"));
    return;
  }
  if (method == "tools/list") {
    const auto cursor = params.find("cursor");
    if (cursor != params.end() && !cursor->is_null()) {
      outlet.done(rpc::error_response(id, rpc::kInvalidParams,
                                      "Invalid params: unknown cursor (tools/list has a single page)"));
      return;
    }
    json result = tools_.list();
    result["ttlMs"] = kListTtlMs;
    result["cacheScope"] = "public";
    mark_stateless_result(result);
    outlet.done(rpc::result_response(id, std::move(result)));
    return;
  }
  CallOptions options = base;
  options.progress_token = meta.progress_token;
  options.progress_message = true;
  options.stateless = true;
  options.logger_name = logger_name_;
  if (meta.log_level) {
    const LogLevel threshold = *meta.log_level;
    options.wants_log = [threshold](LogLevel level) { return level >= threshold; };
  } else {
    options.wants_log = nullptr;  // no level asked for: no notifications/message at all
  }
  calls.call_tool(tools_, id, std::move(key), params, std::move(options), outlet);
}

}  // namespace mcp
