// PEP 508 environment markers: the parser behind evaluate_marker() and marker_syntax_error()
// (engine/script_metadata.h), exposed with positions for the requirement parser's messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace engine::markers {

struct SyntaxError {
  std::string message;       // what is wrong, without position
  std::size_t position = 0;  // 0-based offset into the marker text
};

// nullopt when `marker` is valid PEP 508 marker syntax.
std::optional<SyntaxError> check_syntax(std::string_view marker);

}  // namespace engine::markers
