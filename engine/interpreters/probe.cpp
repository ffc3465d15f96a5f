// Probing candidate interpreters: each runs once with a small script (no shell), prints one
// tagged line, and the outcome is remembered for the life of the process.
#include "engine/interpreters/probe.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include <nlohmann/json.hpp>

namespace engine {
namespace {

constexpr std::size_t kMaxParallelProbes = 4;
constexpr std::size_t kMaxOutputBytes = 1 << 20;
constexpr std::string_view kProbeTag = "MPES-PROBE ";

// Printed on one tagged line so that anything a sitecustomize prints does not confuse us.
// Must run on every Python 3 (older ones are reported, then rejected).
constexpr const char* kProbeScript = R"PY(
import json, os, platform, site, sys, sysconfig
def var(name):
    value = sysconfig.get_config_var(name)
    return value if value else ""
def full_version(info):
    text = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        text += info.releaselevel[0] + str(info.serial)
    return text
mm = "%d.%d" % sys.version_info[:2]
abiflags = getattr(sys, "abiflags", "")
libpython = ""
if var("Py_ENABLE_SHARED"):
    names = []
    for name in (var("INSTSONAME"), var("LDLIBRARY"), "libpython%s%s.so.1.0" % (mm, abiflags),
                 "libpython%s%s.so" % (mm, abiflags)):
        if name and ".so" in name and name not in names:
            names.append(name)
    dirs = []
    libdir = var("LIBDIR")
    for d in (libdir, os.path.join(libdir, var("MULTIARCH")) if libdir and var("MULTIARCH") else "",
              os.path.join(sys.base_prefix, "lib")):
        if d and d not in dirs:
            dirs.append(d)
    for d in dirs:
        for name in names:
            if os.path.isfile(os.path.join(d, name)):
                libpython = os.path.join(d, name)
                break
        if libpython:
            break
sites = []
try:
    sites.extend(site.getsitepackages())
except Exception:
    pass
paths = sysconfig.get_paths()
sites.extend([paths.get("purelib", ""), paths.get("platlib", "")])
site_packages = []
for p in sites:
    if p and os.path.isdir(p) and p not in site_packages:
        site_packages.append(p)
print("MPES-PROBE " + json.dumps({
    "implementation": sys.implementation.name,
    "version": platform.python_version(),
    "version_info": list(sys.version_info[:3]),
    "executable": os.path.realpath(sys.executable) if sys.executable else "",
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "libpython": libpython,
    "site_packages": site_packages,
    "sys_path": [p for p in sys.path if p],
    "markers": {
        "implementation_name": sys.implementation.name,
        "implementation_version": full_version(sys.implementation.version),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": mm,
        "sys_platform": sys.platform,
    },
}))
)PY";

// Every probe runs under this switch, pulled when the server exits without waiting for its
// discovery (kill_running_probes). Never destroyed: a worker may still use it while the process
// ends.
sandbox::KillSwitch& probe_switch() {
  static auto* kill_switch = new sandbox::KillSwitch;
  return *kill_switch;
}

// The exit code, or minus the signal that ended it.
int exit_status(const sandbox::ProcessResult& run) {
  return run.term_signal != 0 ? -run.term_signal : run.exit_code;
}

std::mutex cache_mutex;
std::map<std::string, ProbeOutcome> probe_cache;  // candidate path -> outcome

std::string first_line(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ')) text.remove_prefix(1);
  std::string line(text.substr(0, text.find('\n')));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& item : j[key]) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

ProbeOutcome interpret_probe(const std::string& path, const sandbox::ProcessResult& run,
                             std::chrono::milliseconds timeout) {
  ProbeOutcome outcome;
  if (!run.error.empty()) {
    outcome.error = run.error;
    return outcome;
  }
  if (run.timed_out) {
    outcome.error = "did not answer the probe within " + std::to_string(timeout.count()) + " ms";
    return outcome;
  }
  const std::size_t tag = run.out.rfind(kProbeTag);
  if (exit_status(run) != 0 || tag == std::string::npos) {
    outcome.error = "exited with status " + std::to_string(exit_status(run));
    const std::string said = first_line(run.out);
    if (!said.empty()) outcome.error += ": " + said;
    return outcome;
  }
  const std::string_view line = std::string_view(run.out).substr(tag + kProbeTag.size());
  const nlohmann::json j = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    outcome.error = "printed an unreadable probe answer";
    return outcome;
  }
  try {
    const std::string implementation = j.value("implementation", "");
    const std::string version = j.value("version", "");
    const auto info = j.value("version_info", std::vector<int>{});
    if (implementation != "cpython") {
      outcome.error = (implementation.empty() ? std::string("unknown") : implementation) + " " +
                      version + " is not CPython";
      return outcome;
    }
    if (info.size() < 2 || info[0] != 3 || info[1] < kMinPythonMinor) {
      outcome.error = "Python " + version + " is older than 3." + std::to_string(kMinPythonMinor);
      return outcome;
    }
    Interpreter it;
    it.version = version;
    it.major_minor = std::to_string(info[0]) + "." + std::to_string(info[1]);
    it.executable = j.value("executable", "");
    if (it.executable.empty()) it.executable = path;
    it.prefix = j.value("prefix", "");
    it.base_prefix = j.value("base_prefix", "");
    it.libpython = j.value("libpython", "");
    it.site_packages = string_list(j, "site_packages");
    it.sys_path = string_list(j, "sys_path");
    it.found_as = path;
    if (j.contains("markers") && j["markers"].is_object()) {
      const nlohmann::json& m = j["markers"];
      MarkerEnvironment& env = it.markers;
      env.python_version = m.value("python_version", it.major_minor);
      env.python_full_version = m.value("python_full_version", version);
      env.implementation_name = m.value("implementation_name", env.implementation_name);
      env.implementation_version = m.value("implementation_version", "");
      env.sys_platform = m.value("sys_platform", env.sys_platform);
      env.platform_system = m.value("platform_system", env.platform_system);
      env.platform_machine = m.value("platform_machine", env.platform_machine);
      env.platform_release = m.value("platform_release", "");
      env.platform_version = m.value("platform_version", "");
      env.os_name = m.value("os_name", env.os_name);
      env.platform_python_implementation =
          m.value("platform_python_implementation", env.platform_python_implementation);
    } else {
      it.markers.python_version = it.major_minor;
      it.markers.python_full_version = version;
    }
    outcome.interpreter = std::move(it);
  } catch (const nlohmann::json::exception& e) {
    outcome.error = std::string("printed a malformed probe answer: ") + e.what();
  }
  return outcome;
}

std::vector<std::string> probe_command(const std::string& path) {
  // -I: no PYTHON* variables, no user site, no script directory: the default sys.path.
  return {path, "-I", "-c", kProbeScript};
}


}  // namespace

std::vector<sandbox::ProcessResult> run_probe_commands(
    const std::vector<std::vector<std::string>>& commands, std::chrono::milliseconds timeout) {
  const std::vector<std::string> env = sandbox::inherited_environment();
  std::vector<sandbox::ProcessSpec> specs;
  for (const auto& argv : commands) {
    sandbox::ProcessSpec spec;
    spec.argv = argv;
    spec.env = env;
    spec.output = sandbox::Output::merged;
    spec.timeout_ms = static_cast<int>(timeout.count());
    spec.max_capture = kMaxOutputBytes;
    specs.push_back(std::move(spec));
  }
  return sandbox::run_processes(specs, kMaxParallelProbes, &probe_switch());
}

// Probes the paths not cached yet (in parallel), then answers everything from the cache.
std::vector<ProbeOutcome> probe_all(const std::vector<std::string>& paths,
                                    std::chrono::milliseconds timeout) {
  std::vector<std::string> missing;
  {
    std::lock_guard lock(cache_mutex);
    for (const std::string& p : paths) {
      if (!probe_cache.contains(p) &&
          std::find(missing.begin(), missing.end(), p) == missing.end()) {
        missing.push_back(p);
      }
    }
  }
  std::vector<std::vector<std::string>> commands;
  for (const std::string& p : missing) commands.push_back(probe_command(p));
  const std::vector<sandbox::ProcessResult> runs = run_probe_commands(commands, timeout);
  std::lock_guard lock(cache_mutex);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    probe_cache.emplace(missing[i], interpret_probe(missing[i], runs[i], timeout));
  }
  std::vector<ProbeOutcome> outcomes;
  for (const std::string& p : paths) outcomes.push_back(probe_cache.at(p));
  return outcomes;
}

std::optional<Interpreter> probe_interpreter(const std::string& path, std::string* error,
                                             int timeout_ms) {
  ProbeOutcome outcome = probe_all({path}, std::chrono::milliseconds(timeout_ms)).front();
  if (!outcome.interpreter && error) *error = path + ": " + outcome.error;
  return outcome.interpreter;
}

std::optional<Interpreter> probe_interpreter_with(const std::vector<std::string>& launcher,
                                                  const std::string& path, std::string* error,
                                                  int timeout_ms) {
  std::vector<std::string> command = launcher;
  const auto probe = probe_command(path);
  command.insert(command.end(), probe.begin(), probe.end());
  const auto timeout = std::chrono::milliseconds(timeout_ms);
  ProbeOutcome outcome = interpret_probe(path, run_probe_commands({command}, timeout).front(), timeout);
  if (!outcome.interpreter && error) *error = path + ": " + outcome.error;
  return outcome.interpreter;
}

void clear_interpreter_cache() {
  std::lock_guard lock(cache_mutex);
  probe_cache.clear();
}

void kill_running_probes() { probe_switch().kill(); }

}  // namespace engine
