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
// An argument the inputSchema declares "integer", 0 or more: a JSON integer, or a number with no
// fraction (30.0, which JSON Schema counts as an integer). A string ("30"), a boolean, a number
// with a fraction, a negative one or one beyond 64 bits is refused, the message naming the
// argument and `expected` (what it is and its range, e.g. "a step number: an integer, 0 or more").
// Absent or null = nullopt. Every integer argument of this server's own tools is read through here.
std::optional<std::uint64_t> integer_argument(const nlohmann::json& args, std::string_view name,
                                              std::string_view expected);
// A count the reference server (Python 0.1.8, read by pydantic's lax mode) takes leniently, clamped
// to `lo`..`hi`: any JSON integer (negative, or beyond 64 bits, as the clamp's end), a number with
// no fraction, or a string holding an integer ("30", " 7.0 "). A boolean, a fraction, other text
// or another type is refused naming the argument. Absent or null = nullopt. timeout_seconds only:
// the arguments of this server's own tools are read by integer_argument.
std::optional<std::int64_t> clamped_integer_argument(const nlohmann::json& args, std::string_view name,
                                                     std::int64_t lo, std::int64_t hi);
// Optional "X.Y" interpreter version.
std::optional<std::string> python_version_argument(const nlohmann::json& args);

// Optional session id: the 32 hex digits create_session returned. Absent or null = nullopt.
std::optional<std::string> session_id_argument(const nlohmann::json& args, bool required);
// A step number (>= 0). Absent or null = nullopt.
std::optional<std::uint64_t> step_argument(const nlohmann::json& args, std::string_view name);
// input_files: {path: text} or {path: {"text": ...}} or {path: {"base64": ...}}; the paths as
// given (the engine's rules check them, engine/files/work_files.h).
struct NamedContent {
  std::string path;
  std::string content;
};
std::vector<NamedContent> input_files_argument(const nlohmann::json& args);
// Strict base64 (RFC 4648, padding required, no whitespace); nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

// CallToolResult helpers.
nlohmann::json text_content(std::string text);
nlohmann::json error_result(std::string text);

}  // namespace mcp::tools
