#include "engine/interpreters/interpreter.h"

#include <sys/utsname.h>

namespace engine {

MarkerEnvironment marker_environment(const Interpreter& interpreter) {
  MarkerEnvironment env = interpreter.markers;
  const bool probed = !env.python_version.empty() || !env.python_full_version.empty();
  if (env.python_version.empty()) env.python_version = interpreter.major_minor;
  if (env.python_full_version.empty()) env.python_full_version = interpreter.version;
  if (!probed) {
    // No probe answer to go on: the interpreter runs on this host.
    utsname host{};
    if (::uname(&host) == 0) {
      if (host.sysname[0] != '\0') env.platform_system = host.sysname;
      if (host.machine[0] != '\0') env.platform_machine = host.machine;
      if (env.platform_system == "Linux") env.sys_platform = "linux";
    }
  }
  return env;
}

}  // namespace engine
