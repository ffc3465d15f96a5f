// The session tools: create_session, fork_session, reset_session, close_session, list_sessions
// (steps are execute_python calls with a session_id). Each passes the caller's owner
// (ToolCall::owner) to the engine, which only ever finds that owner's sessions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace mcp::tools {

nlohmann::json session_info_json(const engine::SessionInfo& info);
std::string session_info_text(const engine::SessionInfo& info);
nlohmann::json session_list_json(const engine::SessionList& list);
std::string session_list_text(const engine::SessionList& list);

}  // namespace mcp::tools
