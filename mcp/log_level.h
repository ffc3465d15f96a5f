// MCP logging levels (RFC 5424 severities, as logging/setLevel and notifications/message use them).
#pragma once

#include <optional>
#include <string_view>

namespace mcp {

enum class LogLevel { debug, info, notice, warning, error, critical, alert, emergency };

std::optional<LogLevel> parse_log_level(std::string_view name);
std::string_view to_string(LogLevel level);

}  // namespace mcp
