// What the tools need from the rest of the server: references to parts the server owns and
// keeps alive for as long as any call can run. Handlers keep a copy of this struct.
#pragma once

#include "engine/event_loop.h"
#include "mcp/tool_registry.h"
#include "engine/engine.h"

namespace mcp::tools {

struct Services {
  engine::Engine& engine;
  const engine::EngineConfig& config;
};

ToolDefinition make_execute_python_tool(const Services& services);
ToolDefinition make_validate_script_tool(const Services& services);
ToolDefinition make_check_environment_tool(const Services& services);
// create_session, fork_session, reset_session, close_session, list_sessions (session_tools.cpp).
void register_session_tools(ToolRegistry& registry, const Services& services);

// All of them, in the order tools/list shows them.
void register_tools(ToolRegistry& registry, const Services& services);

}  // namespace mcp::tools
