// Reading tools/call arguments. A wrong or missing argument is not a protocol error: the tool
// answers with isError: true and a message naming the argument, so the model can fix its call.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mcp::tools {

class ArgumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Required string.
std::string string_argument(const nlohmann::json& args, std::string_view name);
// Optional string; absent or null = nullopt.
std::optional<std::string> optional_string_argument(const nlohmann::json& args, std::string_view name);
// Array of strings; absent or null = empty.
std::vector<std::string> string_list_argument(const nlohmann::json& args, std::string_view name);
// Integer; also 30.0 and "30", as lenient clients send them. Absent or null = nullopt.
std::optional<std::int64_t> integer_argument(const nlohmann::json& args, std::string_view name);
// Optional "X.Y" interpreter version.
std::optional<std::string> python_version_argument(const nlohmann::json& args);

// CallToolResult helpers.
nlohmann::json text_content(std::string text);
nlohmann::json error_result(std::string text);

}  // namespace mcp::tools
