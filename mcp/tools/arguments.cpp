#include "mcp/tools/arguments.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace mcp::tools {

using json = nlohmann::json;

namespace {

std::string type_name(const json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

const json* find(const json& args, std::string_view name) {
  const auto it = args.find(name);
  if (it == args.end() || it->is_null()) return nullptr;
  return &*it;
}

ArgumentError wrong_type(std::string_view name, std::string_view expected, const json& got) {
  return ArgumentError("Invalid argument '" + std::string(name) + "': expected " +
                       std::string(expected) + ", got " + type_name(got));
}

}  // namespace

std::string string_argument(const json& args, std::string_view name) {
  const json* value = find(args, name);
  if (value == nullptr) {
    throw ArgumentError("Missing required argument '" + std::string(name) + "' (a string)");
  }
  if (!value->is_string()) throw wrong_type(name, "a string", *value);
  return value->get<std::string>();
}

std::optional<std::string> optional_string_argument(const json& args, std::string_view name) {
  const json* value = find(args, name);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) throw wrong_type(name, "a string", *value);
  return value->get<std::string>();
}

std::vector<std::string> string_list_argument(const json& args, std::string_view name) {
  const json* value = find(args, name);
  if (value == nullptr) return {};
  if (!value->is_array()) throw wrong_type(name, "an array of strings", *value);
  std::vector<std::string> out;
  out.reserve(value->size());
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_string()) {
      throw ArgumentError("Invalid argument '" + std::string(name) + "': item " +
                          std::to_string(i) + " must be a string, got " + type_name(item));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<std::int64_t> integer_argument(const json& args, std::string_view name) {
  const json* value = find(args, name);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer()) {
    if (value->is_number_unsigned()) {
      const auto u = value->get<std::uint64_t>();
      return u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                 ? std::numeric_limits<std::int64_t>::max()
                 : static_cast<std::int64_t>(u);
    }
    return value->get<std::int64_t>();
  }
  if (value->is_number_float()) {
    const double d = value->get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e18) {
      return static_cast<std::int64_t>(d);
    }
    throw ArgumentError("Invalid argument '" + std::string(name) + "': expected an integer, got " +
                        value->dump());
  }
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    std::int64_t parsed = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size()) return parsed;
    throw ArgumentError("Invalid argument '" + std::string(name) + "': expected an integer, got \"" +
                        text + "\"");
  }
  throw wrong_type(name, "an integer", *value);
}

std::optional<std::string> python_version_argument(const json& args) {
  auto version = optional_string_argument(args, "python_version");
  if (!version || version->empty()) return std::nullopt;
  const auto dot = version->find('.');
  bool ok = dot != std::string::npos && dot > 0 && dot + 1 < version->size();
  for (std::size_t i = 0; ok && i < version->size(); ++i) {
    const char c = (*version)[i];
    ok = i == dot || (c >= '0' && c <= '9');
  }
  if (!ok) {
    throw ArgumentError("Invalid argument 'python_version': expected \"X.Y\" such as \"3.12\", got \"" +
                        *version + "\"");
  }
  return version;
}

json text_content(std::string text) {
  return {{"type", "text"}, {"text", std::move(text)}};
}

json error_result(std::string text) {
  return {{"content", json::array({text_content(std::move(text))})}, {"isError", true}};
}

}  // namespace mcp::tools
