// CPython discovery: every interpreter >= 3.9 on the host, probed once and cached.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/interpreters/interpreter.h"
#include "engine/interpreters/probe.h"  // probe_interpreter, kill_running_probes

namespace engine {

struct DiscoveryOptions {
  std::string uv_path = "uv";
  std::vector<std::string> path_dirs;  // empty = $PATH
  std::string pyenv_root;              // empty = $PYENV_ROOT or ~/.pyenv
  std::vector<std::string> system_dirs = {"/usr/bin", "/usr/local/bin"};
  int probe_timeout_ms = 10000;        // per probe; a pyenv shim alone can take ~0.7 s
};

// A candidate that was looked at but is not usable, and why (for check_environment and logs).
struct SkippedInterpreter {
  std::string path;
  std::string source;
  std::string reason;  // "Python 3.8.18 is older than 3.9", "exited with status 127: ...", ...
};

struct DiscoveryReport {
  std::vector<Interpreter> interpreters;
  std::vector<SkippedInterpreter> skipped;
};

// Finds and probes every CPython >= 3.9 (blocking: runs each interpreter once). Deduplicated by
// real executable path, in discovery order.
// Order: uv-managed (`<uv_path> python list --only-installed`, skipped silently without uv),
// pythonX.Y then python3 in each $PATH directory (newest X.Y first), pyenv
// versions/*/bin/python3 (newest first), then pythonX.Y and python3 in each system dir.
// Candidates are probed in parallel, each with a timeout, and every probe outcome is cached for
// the life of the process (keyed by the candidate's path). A venv and its base interpreter share
// an executable but not sys.prefix, so the dedupe key is (real executable, sys.prefix).
std::vector<Interpreter> discover_interpreters(const DiscoveryOptions& options);
DiscoveryReport discover_interpreters_report(const DiscoveryOptions& options);

// The default: Debian's /usr/bin/python3 when present (it carries the system's packages),
// otherwise the first python3 found.
std::optional<Interpreter> default_interpreter(const std::vector<Interpreter>& found);
// The interpreter for "X.Y": the default one when its version matches, else the first found.
// A full "X.Y.Z" selects that exact version the same way.
std::optional<Interpreter> select_interpreter(const std::vector<Interpreter>& found,
                                              const std::string& major_minor);

}  // namespace engine
