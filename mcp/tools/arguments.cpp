#include "mcp/tools/arguments.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

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

std::optional<std::uint64_t> integer_argument(const json& args, std::string_view name,
                                              std::string_view expected) {
  const json* value = find(args, name);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<std::uint64_t>();
  std::string got;
  if (value->is_number_integer()) {
    const auto signed_value = value->get<std::int64_t>();
    if (signed_value >= 0) return static_cast<std::uint64_t>(signed_value);
    got = value->dump();
  } else if (value->is_number_float()) {
    const double d = value->get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && d >= 0 && d < 0x1p64) return static_cast<std::uint64_t>(d);
    if (std::isfinite(d) && d == std::trunc(d) && d >= 0x1p64) {
      got = "a number beyond 64 bits (" + value->dump() + ")";
    } else {
      got = value->dump();
    }
  } else if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    got = "the string " + json(text.substr(0, 40)).dump(-1, ' ', false, json::error_handler_t::replace);
    std::int64_t parsed = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size()) {
      got += " (send the number without quotes)";
    }
  } else if (value->is_boolean()) {
    got = std::string("the boolean ") + (value->get<bool>() ? "true" : "false");
  } else {
    got = type_name(*value);
  }
  throw ArgumentError("Invalid argument '" + std::string(name) + "': expected " + std::string(expected) +
                      ", got " + got);
}

std::optional<std::int64_t> clamped_integer_argument(const json& args, std::string_view name,
                                                     std::int64_t lo, std::int64_t hi) {
  const json* value = find(args, name);
  if (value == nullptr) return std::nullopt;
  const auto clamp_double = [&](double d) -> std::optional<std::int64_t> {
    if (!std::isfinite(d) || d != std::trunc(d)) return std::nullopt;
    if (d <= static_cast<double>(lo)) return lo;
    if (d >= static_cast<double>(hi)) return hi;
    return static_cast<std::int64_t>(d);
  };
  std::optional<std::int64_t> read;
  if (value->is_number_unsigned()) {
    const auto u = value->get<std::uint64_t>();
    read = hi < 0 || u >= static_cast<std::uint64_t>(hi) ? hi : std::max(lo, static_cast<std::int64_t>(u));
  } else if (value->is_number_integer()) {
    read = std::clamp(value->get<std::int64_t>(), lo, hi);
  } else if (value->is_number_float()) {
    read = clamp_double(value->get<double>());
  } else if (value->is_string()) {
    // An optional sign, digits, and optionally a point followed by zeros, within blanks.
    std::string_view text = value->get_ref<const std::string&>();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    std::string_view digits = text;
    if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
    if (const auto point = digits.find('.'); point != std::string_view::npos &&
                                             digits.find_first_not_of('0', point + 1) == std::string_view::npos) {
      digits = digits.substr(0, point);
    }
    if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
      const bool negative = !text.empty() && text.front() == '-';
      std::int64_t parsed = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
      if (ec == std::errc::result_out_of_range) {
        read = negative ? lo : hi;
      } else if (ec == std::errc() && ptr == digits.data() + digits.size()) {
        read = std::clamp(negative ? -parsed : parsed, lo, hi);
      }
    }
  }
  if (read) return read;
  throw ArgumentError("Invalid argument '" + std::string(name) + "': expected an integer (clamped to " +
                      std::to_string(lo) + ".." + std::to_string(hi) + "), got " +
                      (value->is_string() ? "the string " + json(value->get<std::string>().substr(0, 40))
                                                                .dump(-1, ' ', false, json::error_handler_t::replace)
                                          : value->is_primitive() ? value->dump() : type_name(*value)));
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

std::optional<std::string> session_id_argument(const json& args, bool required) {
  const json* value = find(args, "session_id");
  if (value == nullptr) {
    if (required) throw ArgumentError("Missing required argument 'session_id' (the id create_session returned)");
    return std::nullopt;
  }
  if (!value->is_string()) throw wrong_type("session_id", "a string", *value);
  const auto& id = value->get_ref<const std::string&>();
  bool ok = id.size() == 32;
  for (const char c : id) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) {
    throw ArgumentError("Invalid argument 'session_id': expected the 32 hexadecimal digits create_session "
                        "returned, got \"" + id.substr(0, 80) + "\"");
  }
  return id;
}

std::optional<std::uint64_t> step_argument(const json& args, std::string_view name) {
  return integer_argument(args, name, "a step number: an integer, 0 or more");
}

std::vector<NamedContent> input_files_argument(const json& args) {
  const json* value = find(args, "input_files");
  if (value == nullptr) return {};
  if (!value->is_object()) throw wrong_type("input_files", "an object mapping paths to contents", *value);
  std::vector<NamedContent> out;
  for (const auto& [path, content] : value->items()) {
    const std::string where = "Invalid argument 'input_files': '" + path.substr(0, 200) + "'";
    if (content.is_string()) {
      out.push_back({path, content.get<std::string>()});
      continue;
    }
    if (!content.is_object() || content.size() != 1 || !(content.contains("text") || content.contains("base64"))) {
      throw ArgumentError(where + ": expected a string (text), {\"text\": ...} or {\"base64\": ...}, got " +
                          type_name(content));
    }
    const bool is_text = content.contains("text");
    const json& data = is_text ? content["text"] : content["base64"];
    if (!data.is_string()) throw ArgumentError(where + ": expected a string, got " + type_name(data));
    if (is_text) {
      out.push_back({path, data.get<std::string>()});
      continue;
    }
    auto bytes = base64_decode(data.get_ref<const std::string&>());
    if (!bytes) throw ArgumentError(where + ": its \"base64\" is not valid base64 (RFC 4648, with padding)");
    out.push_back({path, std::move(*bytes)});
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + static_cast<std::size_t>(k)];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = value_of(c);
      if (v[k] < 0) return std::nullopt;
    }
    const std::uint32_t n = (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
                            (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
    out.push_back(static_cast<char>((n >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return out;
}

json text_content(std::string text) {
  return {{"type", "text"}, {"text", std::move(text)}};
}

json error_result(std::string text) {
  return {{"content", json::array({text_content(std::move(text))})}, {"isError", true}};
}

}  // namespace mcp::tools
