// The default interpreter's probe, remembered across server starts: probing runs the
// interpreter (hundreds of ms on a busy host), and the first call waits for it. An entry is used
// only while the executable and its libpython are unchanged (same inode, size and mtime).
#pragma once

#include <optional>
#include <string>

#include "engine/interpreters/discovery.h"

namespace engine {

// The cached probe of `candidate` (e.g. "/usr/bin/python3") in `file`, if still valid.
std::optional<Interpreter> load_cached_interpreter(const std::string& file, const std::string& candidate);
// Remembers it (best effort: an unwritable cache only costs the next start a probe).
void store_cached_interpreter(const std::string& file, const std::string& candidate,
                              const Interpreter& interpreter);

}  // namespace engine
