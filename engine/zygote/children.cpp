#include "engine/zygote/children.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sandbox/unique_fd.h"

namespace engine::zygote {

int count_tasks() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> found;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return found;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + e->d_name + "/stat";
    sandbox::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    char buf[512];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid ...": comm may hold anything, ')' included.
    const char* close = std::strrchr(buf, ')');
    char state = 0;
    int ppid = 0;
    if (close == nullptr || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid == parent) found.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  ::closedir(dir);
  return found;
}

void kill_children_until_none() {
  const pid_t self = ::getpid();
  for (int round = 0; round < 10000; ++round) {
    for (const pid_t child : children_of(self)) ::kill(child, SIGKILL);
    bool reaped = false;
    for (;;) {
      const pid_t p = ::waitpid(-1, nullptr, WNOHANG);
      if (p > 0) {
        reaped = true;
        continue;
      }
      if (p < 0 && errno == ECHILD) return;
      break;
    }
    if (!reaped) ::usleep(1000);
  }
}

}  // namespace engine::zygote
