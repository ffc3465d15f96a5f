// CPython discovery: every interpreter >= 3.9 on the host, probed once and cached.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
  bool shared() const { return !libpython.empty(); }
};

struct DiscoveryOptions {
  std::string uv_path = "uv";
  std::vector<std::string> path_dirs;  // empty = $PATH
  std::string pyenv_root;              // empty = $PYENV_ROOT or ~/.pyenv
  std::vector<std::string> system_dirs = {"/usr/bin", "/usr/local/bin"};
};

// Finds and probes every CPython >= 3.9 (blocking: runs each interpreter once). Deduplicated by
// real executable path, in discovery order.
std::vector<Interpreter> discover_interpreters(const DiscoveryOptions& options);

// The default: Debian's /usr/bin/python3 when present (it carries the system's packages),
// otherwise the first python3 found.
std::optional<Interpreter> default_interpreter(const std::vector<Interpreter>& found);
// The interpreter for "X.Y": the default one when its version matches, else the first found.
std::optional<Interpreter> select_interpreter(const std::vector<Interpreter>& found,
                                              const std::string& major_minor);

}  // namespace engine
