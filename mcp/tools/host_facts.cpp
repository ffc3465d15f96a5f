#include "mcp/tools/host_facts.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace mcp::tools {

namespace {
utsname host_uname() {
  utsname info{};
  if (::uname(&info) != 0) info = utsname{};
  return info;
}
}  // namespace

std::string platform_system() {
  const auto info = host_uname();
  return info.sysname[0] != '\0' ? std::string(info.sysname) : std::string("unknown");
}

std::string platform_machine() {
  const auto info = host_uname();
  return info.machine[0] != '\0' ? std::string(info.machine) : std::string("unknown");
}

std::string find_executable(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

engine::MarkerEnvironment marker_environment(const engine::Interpreter& interpreter) {
  // The probe records the interpreter's own marker values; fill in only what is missing.
  engine::MarkerEnvironment env = interpreter.markers;
  if (!env.python_version.empty()) return env;
  env.python_version = interpreter.major_minor;
  env.python_full_version = interpreter.version;
  env.platform_machine = platform_machine();
  env.platform_system = platform_system();
  if (env.platform_system == "Linux") env.sys_platform = "linux";
  return env;
}

}  // namespace mcp::tools
