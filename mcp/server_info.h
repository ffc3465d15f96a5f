// Identity of this server as MCP clients see it (serverInfo).
#pragma once

#include <string_view>

namespace mcp {

inline constexpr std::string_view kServerName = "mcp-python-exec-sandbox";
inline constexpr std::string_view kServerTitle = "Python execution sandbox";
std::string_view server_version();

}  // namespace mcp
