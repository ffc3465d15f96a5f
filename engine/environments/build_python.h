// Every build from source runs confined: it reads and executes what the installer's sandbox
// shows, but writes only its own throw-away places, never the environment being built, the
// installer's staging or cache (in the sandbox's /tmp), nor another build's directories; and with
// --network off it has no network at all, while the front-end (uv) keeps the network it fetches
// with.
//
// uv runs each build backend with the interpreter (through the build environment's bin/python, a
// symlink to it); pip through its own sys.executable. In the with-builds pass the interpreter's
// executable is therefore replaced by mcp-python-exec-sandbox-build-python (build_python/main.cpp),
// bound over it, and the real one is bound, with its whole prefix (so that $ORIGIN-relative
// libpython lookups still work), under kRealInterpreterMount. The stand-in makes the process a
// Landlock domain (sandbox::apply_build_domain) and executes the real interpreter with the same
// argv, so argv[0] (and with it sys.executable, sys.prefix and a build environment's pyvenv.cfg)
// is what it would have been; every process a build starts inherits the domain. Two exceptions,
// each safe because a Landlock domain is inherited and cannot be left:
//   - pip's own process, the front-end, is started by the server with kFrontEndFlag first: it is
//     not confined (it must write the environment), and nothing else started outside a domain
//     can carry the flag (pip starts builds as `sys.executable <script>`, uv as `bin/python -c`).
//   - a process already in a build's domain (kConfinedVariable set) is not confined again.
// uv itself never runs through it; its bytecode compilation (which writes the environment) is
// therefore not asked of it in that pass but done afterwards by the interpreter alone
// (installer.cpp).
//
// Where a build may write (build_writable_dirs): a directory of its own made by the stand-in
// (its TMPDIR and HOME), /dev/shm and the writable devices, and the directories the front-end
// made for it beneath the sandbox's /tmp: its working directory (the unpacked source tree), its
// build environment (uv: the venv of argv[0]), and every directory named for it in its command
// line, in a `-c` program (uv: the wheel and metadata directories, the result file's) or in the
// input file of a pyproject_hooks call (pip: the wheel and metadata directories), and pip's build
// tracker (its environment, PIP_BUILD_TRACKER). A name that is
// not yet a directory stands for its parent, when that exists (pip's `--prefix` of a build
// environment, uv's result file). Nothing that is /tmp itself, outside it, a file, or the
// interpreter's mount. Those names are chosen by the front-end; the parts of them a package
// controls (a build backend's name) cannot name the front-end's random temporary directories
// ahead of time.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/bwrap_command.h"

namespace engine::deps {

// The first argument of pip's own process (the front-end): removed by the stand-in, which then
// executes the interpreter unconfined.
inline constexpr const char* kFrontEndFlag = "--mpes-installer-front-end";
// Set by the stand-in in a build's environment: already confined.
inline constexpr const char* kConfinedVariable = "MPES_BUILD_CONFINED";
// Set by the server in the installer's environment with --network off: builds get no network.
inline constexpr const char* kNoNetworkVariable = "MPES_BUILD_NO_NETWORK";
// The directory of its own the stand-in makes for each build, beneath the sandbox's /tmp.
inline constexpr const char* kPrivateDirPrefix = ".mpes-build-";

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

// The absolute paths beneath `tmp_root` ("/tmp") that `text` names: each occurrence of
// "<tmp_root>/" up to the next quote, whitespace or bracket. In order, not deduplicated.
std::vector<std::string> tmp_paths_in(std::string_view text, const std::string& tmp_root = "/tmp");

// The directories (canonical, deduplicated) beneath `tmp_root` that the build started with
// `argv` in `cwd` and `environment` ("NAME=value") may write, besides its own directory and the
// devices (see the top of this file). Of the environment only pip's build tracker
// (PIP_BUILD_TRACKER, formerly PIP_REQ_TRACKER: where the pip that installs a build's
// requirements registers what it builds) counts. Reads the filesystem: argv[0]'s pyvenv.cfg,
// which names are directories, a hook's input.json.
std::vector<std::string> build_writable_dirs(const std::vector<std::string>& argv, const std::string& cwd,
                                             const std::string& tmp_root = "/tmp",
                                             const std::vector<std::string>& environment = {});

// The device files and directories every build may write: /dev/null, /dev/zero, /dev/full, /dev/tty,
// /dev/ptmx (files), /dev/pts and /dev/shm (directories).
std::vector<std::string> build_writable_devices();
std::vector<std::string> build_writable_device_dirs();

}  // namespace engine::deps
