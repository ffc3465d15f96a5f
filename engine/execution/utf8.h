// UTF-8 as a run's output and a reply need it: what is well formed (Unicode's table 3-7: no
// overlongs, no surrogates, nothing above U+10FFFF), and a copy with every ill-formed byte
// replaced as Python's errors="replace" does. Used by the output capture, the result channel and
// mcp's JSON writer, so that all of them agree on what is valid.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace engine {

// The length of the well-formed sequence starting at s[i] (1 for ASCII), or 0.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// `bytes` with every ill-formed byte replaced by U+FFFD; runs of ASCII are copied at once.
std::string sanitize_utf8(std::string_view bytes);

// True when `bytes` is well-formed UTF-8 (sanitize_utf8 would leave it as it is).
bool valid_utf8(std::string_view bytes);

}  // namespace engine
