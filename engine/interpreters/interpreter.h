// One CPython interpreter as discovery found and probed it (engine/interpreters/discovery.h), and
// what follows from it alone.
#pragma once

#include <string>
#include <vector>

#include "engine/packaging/markers.h"

namespace engine {

struct Interpreter {
  std::string version;         // "3.11.2"
  std::string major_minor;     // "3.11"
  std::string executable;      // resolved real path
  std::string prefix;          // sys.prefix (what the sandbox mounts; PYTHONHOME)
  std::string base_prefix;     // sys.base_prefix
  std::string libpython;       // shared libpython path; "" = static build (spawn path)
  std::vector<std::string> site_packages;  // site.getsitepackages() + purelib/platlib, existing
  std::vector<std::string> sys_path;       // the interpreter's default sys.path (no cwd entry)
  std::string source;          // "uv", "path", "pyenv", "/usr/bin", "/usr/local/bin"
  std::string found_as;        // the path discovery ran (a symlink, a pyenv shim, ...)
  MarkerEnvironment markers;   // PEP 508 marker values of this interpreter
  bool shared() const { return !libpython.empty(); }
};

// The PEP 508 marker environment of an interpreter: the values its probe recorded, with what a
// probe could not say filled in (python_version and python_full_version from its version; the
// platform from this host when nothing was probed). The one source of marker values: script
// validation, the requirements an environment is built from, and the validate_script tool.
MarkerEnvironment marker_environment(const Interpreter& interpreter);

}  // namespace engine
