// Builds from source without network (--network off): the installer front-end (uv) keeps the
// network it fetches with, while every build it starts has none.
//
// uv runs each build backend with the interpreter (through the build environment's
// bin/python, a symlink to it). In the installer's sandbox the interpreter's executable is
// therefore replaced by mcp-python-exec-sandbox-build-python (build_python/main.cpp), bound over
// it, and the real one is bound, with its whole prefix (so that $ORIGIN-relative libpython
// lookups still work), under kRealInterpreterMount. The stand-in takes the network away and
// executes the real interpreter with the same argv, so argv[0] (and with it sys.executable,
// sys.prefix and a build environment's pyvenv.cfg) is what it would have been; every process a
// build starts inherits the restriction. uv itself never runs through it.
//
// Pure: paths only. The program and the installer (installer.cpp) share these.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/bwrap_command.h"

namespace engine::deps {

// Where, inside the installer's sandbox, the real interpreter's prefix is bound (its /tmp is the
// sandbox's own tmpfs).
inline constexpr const char* kRealInterpreterMount = "/tmp/.mpes-interpreter";

// The real interpreter, inside the sandbox, for the canonical path of its executable
// (/usr/bin/python3.11 -> /tmp/.mpes-interpreter/bin/python3.11). "" when the path has no
// prefix above its directory.
inline std::string real_interpreter_path(const std::string& canonical_executable) {
  const std::filesystem::path exe(canonical_executable);
  const auto dir = exe.parent_path();
  if (!exe.is_absolute() || exe.filename().empty() || dir == dir.root_path()) return {};
  return std::string(kRealInterpreterMount) + "/" + dir.filename().string() + "/" + exe.filename().string();
}

// The two read-only binds, in this order: the real interpreter's prefix at kRealInterpreterMount,
// then `stand_in` over the canonical executable. Empty when real_interpreter_path is "".
inline std::vector<sandbox::Bind> build_python_binds(const std::string& stand_in,
                                                     const std::string& canonical_executable) {
  if (real_interpreter_path(canonical_executable).empty()) return {};
  const std::filesystem::path exe(canonical_executable);
  return {{exe.parent_path().parent_path().string(), kRealInterpreterMount},
          {stand_in, canonical_executable}};
}

}  // namespace engine::deps
