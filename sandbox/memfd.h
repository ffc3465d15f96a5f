// Content handed to a sandboxed process as a file: a memfd holding exactly `data`, sealed against
// any change (size and writes), close-on-exec, its offset at 0 (shared with every copy of the fd).
#pragma once

#include <string_view>

#include "sandbox/unique_fd.h"

namespace sandbox {

// Throws std::system_error (what(): "memfd_create: <strerror>" or "writing the <name>: <strerror>",
// code(): the errno) when the memfd cannot be made or filled.
UniqueFd sealed_memfd(const char* name, std::string_view data);

}  // namespace sandbox
