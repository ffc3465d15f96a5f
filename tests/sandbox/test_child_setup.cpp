#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

#include "sandbox/child_setup.h"
#include "tests/support/sandbox_fork.h"

using test_support::ChildResult;
using test_support::run_in_child;

namespace {

std::set<int> open_fds() {
  std::set<int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::stoi(e->d_name);
    if (fd != own) out.insert(fd);
  }
  ::closedir(dir);
  return out;
}

bool is_fifo(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

}  // namespace

TEST_CASE("place_fds fills the slots and leaves every other fd open; arrange_fds closes them", "[child_setup]") {
  for (const bool arrange : {false, true}) {
    ChildResult r = run_in_child([arrange] {
      const int kept = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // a file of the session's own
      int p[2];
      if (kept < 0 || ::pipe2(p, O_CLOEXEC) != 0) return 10;
      const std::set<int> before = open_fds();
      const int wanted[] = {-1, p[1], -1};
      if (arrange) {
        sandbox::arrange_fds(wanted);
      } else {
        sandbox::place_fds(wanted);
      }
      if (!is_fifo(1)) return 11;  // the pipe's write end is fd 1 now
      const std::set<int> after = open_fds();
      if (arrange) return after == std::set<int>{0, 1, 2} ? 0 : 12;
      // Nothing more and nothing less: the slots replaced, the temporaries closed.
      return after == before && ::fcntl(kept, F_GETFD) >= 0 ? 0 : 13;
    });
    INFO((arrange ? "arrange_fds: " : "place_fds: ") + r.describe());
    CHECK(r.exited(0));
  }
}
