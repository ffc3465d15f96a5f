#include "engine/cache_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace engine {
namespace {

constexpr const char* kName = "mcp-python-exec-sandbox";

bool absolute(const char* path) { return path != nullptr && path[0] == '/'; }

// The home directory of this process's user in the account database ("" when none).
std::string account_home() {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || !absolute(found->pw_dir)) {
    return "";
  }
  return found->pw_dir;
}

}  // namespace

bool claim_private_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & 077) == 0;
}

std::string cache_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); absolute(xdg)) {
    return std::string(xdg) + "/" + kName;
  }
  if (const char* home = std::getenv("HOME"); absolute(home)) {
    return std::string(home) + "/.cache/" + kName;
  }
  if (const std::string home = account_home(); !home.empty()) return home + "/.cache/" + kName;
  const std::string shared = std::string("/tmp/") + kName + "-" + std::to_string(::geteuid());
  return claim_private_dir(shared) ? shared : "";
}

}  // namespace engine
