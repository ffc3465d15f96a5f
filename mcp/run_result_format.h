// execute_python results: the text of the Python server (sections joined by "\n"), the
// structuredContent and its outputSchema, and the CallToolResult combining them with images.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/run.h"

namespace mcp {

std::string format_run_text(const engine::RunResult& result);
nlohmann::json run_structured_content(engine::RunResult result);
nlohmann::json run_output_schema();
// content: [text, notes..., images...]; isError only for a service error.
nlohmann::json run_call_tool_result(engine::RunResult result);

}  // namespace mcp
