// Facts about the host the tools report, read without running anything.
#pragma once

#include <string>

namespace mcp::tools {

std::string platform_system();   // "Linux"
std::string platform_machine();  // "x86_64"

}  // namespace mcp::tools
