// Test helper: run a function in a forked child (so a sandbox layer applied there cannot
// touch the test process) and collect its exit status and a small report.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

namespace test_support {

struct ChildResult {
  int status = 0;      // waitpid status
  std::string report;  // what the child wrote with report()
  bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool signaled(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }
  std::string describe() const {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status)) + " " + report;
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status)) + " " + report;
    return "status " + std::to_string(status);
  }
};

// The child's report channel (valid only inside run_in_child's function).
inline int& report_fd() {
  static int fd = -1;
  return fd;
}
inline void report(const std::string& text) {
  [[maybe_unused]] auto n = ::write(report_fd(), text.data(), text.size());
}

// fn returns the child's exit code; an exception exits 99 with its message as the report.
inline ChildResult run_in_child(const std::function<int()>& fn) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(p[0]);
    report_fd() = p[1];
    // Default dispositions: the test framework's crash handlers must not report for a child.
    for (int sig : {SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGBUS, SIGSYS, SIGTERM, SIGINT}) {
      ::signal(sig, SIG_DFL);
    }
    int code = 98;
    try {
      code = fn();
    } catch (const std::exception& e) {
      report(std::string("exception: ") + e.what());
      code = 99;
    }
    ::_exit(code);
  }
  ::close(p[1]);
  ChildResult r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.report.append(buf, static_cast<std::size_t>(n));
  }
  ::close(p[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {}
  return r;
}

}  // namespace test_support
