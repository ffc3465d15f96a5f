#include "sandbox/path_search.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace sandbox {
namespace {

namespace fs = std::filesystem;

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `path` made absolute against the current directory, lexically (no symlink resolution: the
// answer names what the user named).
std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return path;
  return (path.empty() ? cwd : (cwd / path).lexically_normal()).string();
}

}  // namespace

std::vector<std::string> path_directories(std::string_view search_path) {
  std::vector<std::string> dirs;
  while (true) {
    const std::size_t colon = search_path.find(':');
    std::string dir = absolute(std::string(search_path.substr(0, colon)));
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    dirs.push_back(std::move(dir));
    if (colon == std::string_view::npos) break;
    search_path.remove_prefix(colon + 1);
  }
  return dirs;
}

std::string search_path() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? std::string(path) : std::string(kDefaultSearchPath);
}

std::optional<std::string> find_executable(const std::string& name, std::string_view search_path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (!executable_file(name)) return std::nullopt;
    return absolute(name);
  }
  for (const std::string& dir : path_directories(search_path)) {
    std::string candidate = (dir == "/" ? "" : dir) + "/" + name;
    if (executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> find_executable(const std::string& name) {
  return find_executable(name, search_path());
}

}  // namespace sandbox
