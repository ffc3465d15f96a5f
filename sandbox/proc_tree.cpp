#include "sandbox/proc_tree.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "sandbox/read_file.h"

namespace sandbox {

pid_t pid_of_pidfd(int pidfd) {
  const std::string info = read_file("/proc/self/fdinfo/" + std::to_string(pidfd)).value_or("");
  const auto at = info.find("\nPid:");
  if (at == std::string::npos) return -1;
  const long pid = std::strtol(info.c_str() + at + 5, nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : -1;
}

std::map<pid_t, ProcStat> read_proc_stats() {
  std::map<pid_t, ProcStat> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string stat = read_file(std::string("/proc/") + e->d_name + "/stat").value_or("");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    const char* p = stat.c_str() + close + 1;
    // Fields after comm, counting from 3 (state): ppid is 4; utime..cstime are 14..17.
    long long field[18] = {};
    int index = 3;
    while (*p != '\0' && index <= 17) {
      while (*p == ' ') ++p;
      if (index >= 4) field[index] = std::strtoll(p, nullptr, 10);
      while (*p != '\0' && *p != ' ') ++p;
      ++index;
    }
    if (index <= 17) continue;
    out[static_cast<pid_t>(pid)] = {static_cast<pid_t>(field[4]), field[14] + field[15] + field[16] + field[17]};
  }
  ::closedir(dir);
  return out;
}

std::int64_t tree_cpu_us(const std::map<pid_t, ProcStat>& stats, pid_t root) {
  if (stats.count(root) == 0) return -1;
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, s] : stats) children.emplace(s.ppid, pid);
  std::int64_t ticks = 0;
  std::deque<pid_t> todo = {root};
  while (!todo.empty()) {
    const pid_t pid = todo.front();
    todo.pop_front();
    ticks += stats.at(pid).cpu_ticks;
    const auto [first, last] = children.equal_range(pid);
    for (auto it = first; it != last; ++it) todo.push_back(it->second);
  }
  const long hz = ::sysconf(_SC_CLK_TCK);
  return ticks * 1000000 / (hz > 0 ? hz : 100);
}

std::int64_t tree_cpu_us(pid_t root) { return tree_cpu_us(read_proc_stats(), root); }

}  // namespace sandbox
