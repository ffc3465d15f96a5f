// check_environment: the nine lines of the Python server, then what the engine probed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/event_loop.h"
#include "mcp/interpreter_catalog.h"
#include "engine/engine.h"

namespace mcp::tools {

struct EnvironmentFacts {
  std::string python_version;  // e.g. "3.11.2", or "3.14 (not found; ...)"
  std::string uv;              // path or "not found"
  std::string platform;        // "Linux x86_64"
  std::string sandbox_backend;
  int default_timeout_seconds = 30;
  int max_timeout_seconds = 300;
  std::size_t max_output_bytes = 102400;
  bool warm_cache = true;
  nlohmann::json report;        // Engine::environment_report (an object)
  nlohmann::json interpreters;  // the report's list, else ours: [{version, executable, ...}]
};

// `selected` is the interpreter scripts run on (`why` when there is none); `found` is used
// only when the engine's report has no "interpreters" list of its own.
EnvironmentFacts gather_environment_facts(const engine::EngineConfig& config,
                                          const std::optional<engine::Interpreter>& selected,
                                          const std::string& why, nlohmann::json report,
                                          const std::vector<engine::Interpreter>& found);
std::string environment_text(const EnvironmentFacts& facts);
nlohmann::json environment_structured(const EnvironmentFacts& facts);
nlohmann::json environment_output_schema();

}  // namespace mcp::tools
