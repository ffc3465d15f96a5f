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

}  // namespace mcp::tools
