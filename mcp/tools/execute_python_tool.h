// execute_python: one sandboxed run through the engine, answered with run_result_format.
#pragma once

#include <cstdint>
#include <string>

#include "engine/engine.h"

namespace mcp::tools {

// timeout_seconds as the Python server treats it: missing = default, then clamped to [1, max].
int clamp_timeout(std::optional<std::int64_t> requested, const engine::EngineConfig& config);
std::string execute_python_description(const engine::EngineConfig& config);

}  // namespace mcp::tools
