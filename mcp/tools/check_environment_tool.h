// check_environment: the nine lines of the Python server, then what the engine probed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/event_loop.h"
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
  nlohmann::json report;        // the engine's report as JSON (report_json)
  nlohmann::json interpreters;  // the report's list: [{version, executable, ...}]
};

// The engine's report as the JSON of structuredContent.engine (and of the text's later lines).
nlohmann::json report_json(const engine::EnvironmentReport& report);

// `selected` is the interpreter scripts run on (`why` when there is none).
EnvironmentFacts gather_environment_facts(const engine::EngineConfig& config,
                                          const std::optional<engine::Interpreter>& selected,
                                          const std::string& why, const engine::EnvironmentReport& report);
std::string environment_text(const EnvironmentFacts& facts);
nlohmann::json environment_structured(const EnvironmentFacts& facts);
nlohmann::json environment_output_schema();

}  // namespace mcp::tools
