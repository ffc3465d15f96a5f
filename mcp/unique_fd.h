// The MCP layer owns fds with the sandbox layer's RAII holder (mcp -> engine -> sandbox).
#pragma once

#include "sandbox/unique_fd.h"

namespace mcp {

using UniqueFd = sandbox::UniqueFd;

}  // namespace mcp
