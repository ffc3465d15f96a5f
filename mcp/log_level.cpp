#include "mcp/log_level.h"

#include <array>
#include <utility>

namespace mcp {

namespace {
constexpr std::array<std::pair<LogLevel, std::string_view>, 8> kNames{{
    {LogLevel::debug, "debug"},
    {LogLevel::info, "info"},
    {LogLevel::notice, "notice"},
    {LogLevel::warning, "warning"},
    {LogLevel::error, "error"},
    {LogLevel::critical, "critical"},
    {LogLevel::alert, "alert"},
    {LogLevel::emergency, "emergency"},
}};
}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (const auto& [level, text] : kNames) {
    if (text == name) return level;
  }
  return std::nullopt;
}

std::string_view to_string(LogLevel level) {
  for (const auto& [value, text] : kNames) {
    if (value == level) return text;
  }
  return "info";
}

}  // namespace mcp
