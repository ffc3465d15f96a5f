// Protects the MCP stream: the transport gets private (O_CLOEXEC) copies of stdin and stdout,
// and fds 0 and 1 are pointed at /dev/null and stderr, so that nothing else in the process and
// no child process can read the client's messages or write into the protocol stream.
#pragma once

#include <optional>
#include <string>

#include "sandbox/unique_fd.h"

namespace mcp {

struct ProtocolFds {
  sandbox::UniqueFd in;
  sandbox::UniqueFd out;
};

// nullopt + `error` when stdin or stdout is not open.
std::optional<ProtocolFds> take_over_stdio(std::string* error);

}  // namespace mcp
