#include "mcp/jsonrpc.h"

#include <utility>

namespace mcp::jsonrpc {

namespace {

// One pass over the raw text counting bracket depth outside strings.
bool nesting_within_limit(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNesting) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

}  // namespace

std::optional<json> parse(std::string_view text) {
  if (!nesting_within_limit(text)) return std::nullopt;
  json value = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

bool is_valid_id(const json& id) { return id.is_string() || id.is_number(); }

json error_response(const std::optional<json>& id, int code, std::string message,
                    const std::optional<json>& data) {
  json error = {{"code", code}, {"message", std::move(message)}};
  if (data) error["data"] = *data;
  json response = {{"jsonrpc", "2.0"}, {"error", std::move(error)}};
  if (id) response["id"] = *id;
  return response;
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json notification(std::string_view method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string serialize(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

Classified classify(const json& message) {
  Classified out;
  if (!message.is_object()) {
    out.problem = "a JSON-RPC message must be an object";
    return out;
  }
  const auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  if (has_id && is_valid_id(*id_it)) out.id = *id_it;

  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0") {
    out.problem = "\"jsonrpc\" must be \"2.0\"";
    return out;
  }
  if (has_id && !out.id) {
    out.problem = "\"id\" must be a string or a number";
    return out;
  }
  const auto method = message.find("method");
  if (method == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      out.kind = Kind::response;
      return out;
    }
    out.problem = "missing \"method\"";
    return out;
  }
  if (!method->is_string()) {
    out.problem = "\"method\" must be a string";
    return out;
  }
  out.method = method->get<std::string>();
  const auto params = message.find("params");
  if (params != message.end() && !params->is_object() && !params->is_array()) {
    out.problem = "\"params\" must be an object";
    return out;
  }
  out.kind = has_id ? Kind::request : Kind::notification;
  return out;
}

}  // namespace mcp::jsonrpc
