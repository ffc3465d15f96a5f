#include "mcp/tools/host_facts.h"

#include <sys/utsname.h>

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
