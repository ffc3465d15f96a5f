// Facts about the host the tools report, read without running anything.
#pragma once

#include <string>

#include "engine/interpreters/discovery.h"
#include "engine/packaging/script_metadata.h"

namespace mcp::tools {

std::string platform_system();   // "Linux"
std::string platform_machine();  // "x86_64"
// PEP 508 marker environment of an interpreter running on this host.
engine::MarkerEnvironment marker_environment(const engine::Interpreter& interpreter);

}  // namespace mcp::tools
