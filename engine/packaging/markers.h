// PEP 508 environment markers: the values of an interpreter's environment, their evaluation,
// and the syntax check (with positions, for the requirement parser's messages).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace engine {

// Environment for marker evaluation (python_version, sys_platform, ...); default: from the
// interpreter that would run the script.
struct MarkerEnvironment {
  std::string python_version;        // "3.11"
  std::string python_full_version;   // "3.11.2"
  std::string implementation_name = "cpython";
  std::string sys_platform = "linux";
  std::string platform_system = "Linux";
  std::string platform_machine = "x86_64";
  std::string os_name = "posix";
  std::string platform_python_implementation = "CPython";
  std::string platform_release;        // platform.release(), e.g. "6.1.0-18-amd64"
  std::string platform_version;        // platform.version()
  std::string implementation_version;  // "" = python_full_version
};
// PEP 508 marker evaluation (`extra` is ""). False when the marker is not valid PEP 508.
bool evaluate_marker(std::string_view marker, const MarkerEnvironment& env);
// nullopt when `marker` is valid PEP 508 marker syntax, else the reason.
std::optional<std::string> marker_syntax_error(std::string_view marker);

}  // namespace engine

namespace engine::markers {

struct SyntaxError {
  std::string message;       // what is wrong, without position
  std::size_t position = 0;  // 0-based offset into the marker text
};

// nullopt when `marker` is valid PEP 508 marker syntax.
std::optional<SyntaxError> check_syntax(std::string_view marker);

}  // namespace engine::markers
