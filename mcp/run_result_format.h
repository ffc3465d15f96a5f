// execute_python results: the text of the Python server (sections joined by "\n"), the
// structuredContent and its outputSchema, and the CallToolResult combining them with images.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/run.h"

namespace mcp {

std::string format_run_text(const engine::RunResult& result);
// A file name (bytes the script chose) as the result text shows it: on one line and
// unambiguous, as Python's repr writes a string's inside. Backslash as \\, \n \t \r, other
// control characters (C0, DEL, C1) and ill-formed UTF-8 bytes as \xNN, line separators and
// bidirectional controls as \uNNNN; a name cannot forge a line of the text. The runner's notes
// show names the same way (python_stubs/files.py, _mpes_shown).
std::string shown_file_name(std::string_view name);
nlohmann::json run_structured_content(engine::RunResult result);
nlohmann::json run_output_schema();
// content: [text, notes..., images...]; isError only for a service error.
nlohmann::json run_call_tool_result(engine::RunResult result);

}  // namespace mcp
