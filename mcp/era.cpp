#include "mcp/era.h"

#include "mcp/jsonrpc.h"
#include "mcp/server_info.h"

namespace mcp {

using json = nlohmann::json;

std::string_view negotiate_protocol_version(std::string_view requested) {
  for (auto version : kSupportedProtocolVersions) {
    if (version == requested) return version;
  }
  return kSupportedProtocolVersions.front();
}

bool is_initialize_era_version(std::string_view version) {
  for (auto known : kSupportedProtocolVersions) {
    if (known == version) return true;
  }
  return false;
}

bool is_stateless_request(std::string_view method, const json& params) {
  if (method == "server/discover") return true;
  if (!params.is_object()) return false;
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return false;
  return meta->contains(meta_key::kProtocolVersion) || meta->contains(meta_key::kClientCapabilities);
}

namespace {

Refusal invalid_params(std::string message) {
  return {jsonrpc::kInvalidParams, "Invalid params: " + std::move(message), std::nullopt};
}

}  // namespace

std::optional<Refusal> read_request_meta(const json& params, RequestMeta& meta) {
  const std::string required = " (required on every request of protocol " +
                               std::string(kStatelessProtocolVersion) + ")";
  if (!params.is_object()) return invalid_params("params must be an object with _meta" + required);
  const auto it = params.find("_meta");
  if (it == params.end() || !it->is_object()) {
    return invalid_params("missing _meta with " + std::string(meta_key::kProtocolVersion) +
                          " and " + std::string(meta_key::kClientCapabilities) + required);
  }
  const json& m = *it;
  const auto version = m.find(meta_key::kProtocolVersion);
  if (version == m.end() || !version->is_string()) {
    return invalid_params("_meta is missing " + std::string(meta_key::kProtocolVersion) +
                          " (a string)" + required);
  }
  const auto capabilities = m.find(meta_key::kClientCapabilities);
  if (capabilities == m.end() || !capabilities->is_object()) {
    return invalid_params("_meta is missing " + std::string(meta_key::kClientCapabilities) +
                          " (an object)" + required);
  }
  meta.protocol_version = version->get<std::string>();
  meta.log_level.reset();
  if (const auto level = m.find(meta_key::kLogLevel); level != m.end() && !level->is_null()) {
    std::optional<LogLevel> parsed;
    if (level->is_string()) parsed = parse_log_level(level->get<std::string>());
    if (!parsed) {
      return invalid_params(std::string(meta_key::kLogLevel) +
                            " must be one of debug, info, notice, warning, error, critical, "
                            "alert, emergency");
    }
    meta.log_level = parsed;
  }
  meta.progress_token.reset();
  if (const auto token = m.find("progressToken"); token != m.end() && jsonrpc::is_valid_id(*token)) {
    meta.progress_token = *token;
  }
  return std::nullopt;
}

std::optional<Refusal> check_protocol_version(const std::string& version) {
  if (version == kStatelessProtocolVersion) return std::nullopt;
  json supported = json::array();
  for (auto v : kAllProtocolVersions) supported.push_back(v);
  std::string message = "Unsupported protocol version: " + version + ". ";
  message += is_initialize_era_version(version)
                 ? "Protocol " + version + " is served after an initialize handshake"
                 : "Supported: " + std::string(kStatelessProtocolVersion) +
                       " per request, 2024-11-05 to 2025-11-25 through initialize";
  return Refusal{jsonrpc::kUnsupportedProtocolVersion, std::move(message),
                 json{{"supported", std::move(supported)}, {"requested", version}}};
}

json server_implementation() {
  return {{"name", kServerName}, {"title", kServerTitle}, {"version", server_version()}};
}

void mark_stateless_result(json& result) {
  result["resultType"] = "complete";
  json& meta = result["_meta"];
  if (!meta.is_object()) meta = json::object();
  meta[meta_key::kServerInfo] = server_implementation();
}

}  // namespace mcp
