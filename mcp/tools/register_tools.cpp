#include "mcp/tools/services.h"

namespace mcp::tools {

void register_tools(ToolRegistry& registry, const Services& services) {
  registry.add(make_execute_python_tool(services));
  registry.add(make_validate_script_tool(services));
  registry.add(make_check_environment_tool(services));
  register_session_tools(registry, services);
}

}  // namespace mcp::tools
