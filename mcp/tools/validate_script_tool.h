// validate_script: PEP 723 / 508 / 440 checks against the interpreter that would run the script.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/interpreters/discovery.h"
#include "engine/packaging/script_metadata.h"

namespace mcp::tools {

// Text as the Python server writes it: VALID + requires-python + dependencies, or INVALID: ...
std::string validation_text(const engine::ScriptValidation& validation,
                            const engine::Interpreter& interpreter);
nlohmann::json validation_structured(const engine::ScriptValidation& validation,
                                     const engine::Interpreter& interpreter);
nlohmann::json validation_output_schema();

}  // namespace mcp::tools
