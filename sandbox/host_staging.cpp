#include "sandbox/host_staging.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sandbox {

HostStaging plan_host_staging(const std::vector<std::string>& paths,
                              const std::function<bool(std::size_t)>& is_dir,
                              const std::function<bool(const std::string&)>& traversable) {
  HostStaging plan;
  auto covered = [&plan](const std::string& path) {
    for (const auto& h : plan.hide_points) {
      if (path.size() > h.size() && path.compare(0, h.size(), h) == 0 && path[h.size()] == '/') return true;
    }
    return false;
  };
  auto add_unique = [](std::vector<std::string>& list, const std::string& item) {
    for (const auto& x : list) {
      if (x == item) return;
    }
    list.push_back(item);
  };
  // Hide points first (the topmost untraversable ancestor of each path).
  std::vector<std::string> hide(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      const std::string dir = path.substr(0, slash);
      if (!traversable(dir)) {
        hide[i] = dir;
        break;
      }
    }
  }
  for (const auto& h : hide) {
    if (!h.empty()) add_unique(plan.hide_points, h);
  }
  // Topmost only: a hide point under another one is inside its tmpfs already.
  std::vector<std::string> top;
  for (const auto& h : plan.hide_points) {
    bool nested = false;
    for (const auto& other : plan.hide_points) {
      if (h.size() > other.size() && h.compare(0, other.size(), other) == 0 && h[other.size()] == '/') nested = true;
    }
    if (!nested) top.push_back(h);
  }
  plan.hide_points = top;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (hide[i].empty() || !covered(paths[i])) continue;
    plan.bound.push_back(i);
    // Directories between the hide point and the path (the path too, if it is a directory).
    const std::string& path = paths[i];
    std::string h;
    for (const auto& p : plan.hide_points) {
      if (path.compare(0, p.size(), p) == 0 && path[p.size()] == '/') h = p;
    }
    for (std::size_t slash = path.find('/', h.size() + 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      add_unique(plan.dirs, path.substr(0, slash));
    }
    if (is_dir(i)) {
      add_unique(plan.dirs, path);
    } else {
      add_unique(plan.files, path);
    }
  }
  for (std::size_t i : plan.bound) plan.bound_paths.push_back(paths[i]);
  return plan;
}

HostStaging plan_host_staging(const std::vector<std::string>& paths) {
  std::vector<bool> dirs;
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw std::runtime_error("cannot use " + path + " in the sandbox: " + std::strerror(errno));
    }
    dirs.push_back(S_ISDIR(st.st_mode));
  }
  return plan_host_staging(
      paths, [&dirs](std::size_t i) { return dirs[i]; },
      [](const std::string& dir) {
        struct stat st {};
        return ::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) != 0;
      });
}

}  // namespace sandbox
