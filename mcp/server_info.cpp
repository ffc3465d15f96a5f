#include "mcp/server_info.h"

namespace mcp {

std::string_view server_version() { return MPES_VERSION; }

}  // namespace mcp
