#include "mcp/jsonrpc.h"

#include <cmath>
#include <utility>

#include "engine/execution/json_string.h"

namespace mcp::jsonrpc {

namespace {

// ---------------------------------------------------------------------------------------------
// Writing. nlohmann's serializer decodes every byte of every string through a UTF-8 state
// machine; a run's reply carries its output twice (text and structuredContent), so for 1 MiB of
// output that decoding was a fifth of the whole call's CPU. The writer below gives byte for
// byte what dump(-1, ' ', false, replace) gives (the fuzzer and the unit tests compare the two),
// strings through engine/execution/json_string.h (plain bytes eight at a time); anything unusual
// (a string that is not valid UTF-8, a number, binary) is left to nlohmann.

void append_value(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.items()) {
        if (!first) out += ',';
        first = false;
        if (!engine::append_json_string(out, key)) out += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
        out += ':';
        append_value(out, member);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value) {
        if (!first) out += ',';
        first = false;
        append_value(out, element);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      if (engine::append_json_string(out, value.get_ref<const std::string&>())) return;
      break;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    default:
      break;
  }
  out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// About the size `value` takes written (numbers guessed). A string gets an eighth more for its
// escapes: output has a \n every line at least, and a reply writing past its reservation copies
// everything written so far into a buffer twice as large.
std::size_t size_hint(const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      std::size_t size = 2;
      for (const auto& [key, member] : value.items()) size += key.size() + 4 + size_hint(member);
      return size;
    }
    case json::value_t::array: {
      std::size_t size = 2;
      for (const auto& element : value) size += 1 + size_hint(element);
      return size;
    }
    case json::value_t::string:
    {
      const std::size_t size = value.get_ref<const std::string&>().size();
      return size + size / 8 + 2;
    }
    default:
      return 24;
  }
}

}  // namespace

std::optional<json> parse(std::string_view text) {
  if (!engine::json_nesting_within(text, kMaxNesting)) return std::nullopt;
  json value = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

bool is_valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

std::string id_problem(const json& id) {
  if (is_valid_id(id)) return {};
  if (id.is_number_float()) {
    const double value = id.get<double>();
    // Integral and beyond 64 bits: an integer literal nlohmann could only keep as a double.
    if (std::isfinite(value) && value == std::trunc(value) &&
        (value >= 0x1p64 || value <= -0x1p63)) {
      return "\"id\" is an integer outside the 64-bit range this server can echo exactly "
             "(-9223372036854775808 to 18446744073709551615); use a smaller integer or a string";
    }
    return "\"id\" must be a string or an integer, got the number " + id.dump() +
           " (a number with a fraction or an exponent is not an id)";
  }
  return "\"id\" must be a string or an integer";
}

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
  std::string out;
  // Room for the whole message (escapes aside) before writing: a reply carrying megabytes of
  // output is not copied over again each time the buffer grows.
  out.reserve(size_hint(message));
  append_value(out, message);
  return out;
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
    out.problem = id_problem(*id_it);
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
