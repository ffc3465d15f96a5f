// JSON text at the byte level, where the server needs it faster or safer than the parser: a string
// as the server writes it (mcp's reply writer) and as output limits count it (the output capture,
// the result channel), and the nesting depth of text not parsed yet. The one place that knows
// which bytes are escaped and how. The form is nlohmann's compact one: \" \\ \b \f \n \r \t, \u00xx for the other bytes
// below 0x20, everything else (0x7f and UTF-8 included) as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace engine {

// The size of `text` once written inside a JSON string (quotes not counted).
std::size_t json_string_size(std::string_view text);

// Appends `text` as a JSON string, quotes included; false, with `out` unchanged, when `text` is
// not valid UTF-8 (the caller decides how to replace it).
bool append_json_string(std::string& out, std::string_view text);

// True when the bracket depth of JSON `text` (brackets inside strings not counted) never exceeds
// `limit`: checked in one pass before parsing, so that no recursive parse or walk over text a
// client or a script sent can exhaust the stack.
bool json_nesting_within(std::string_view text, int limit);

}  // namespace engine
