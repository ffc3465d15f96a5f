// mcp-python-exec-sandbox-build-python: stands in for the interpreter inside an installer's
// sandbox when builds from source must run without network (engine/environments/build_python.h).
// In order: no_new_privs (bwrap set it already; a filter needs it), a Landlock domain with no TCP
// bind or connect and, where the kernel scopes, no abstract socket or signal outside the build
// (sandbox/landlock.h), a seccomp filter refusing every socket family but AF_UNIX
// (sandbox/seccomp_filter.h), then the real interpreter with this process's argv. Any failure
// ends here with status 127: a build never runs with the network it must not have.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "engine/environments/build_python.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "mcp-python-exec-sandbox-build-python: %s\n", what.c_str());
  std::_Exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) die("cannot read /proc/self/exe: " + ec.message());
  const std::string real = engine::deps::real_interpreter_path(self.string());
  if (real.empty()) die("no real interpreter for " + self.string());
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) {
    die(std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno));
  }
  try {
    sandbox::apply_no_network_domain(sandbox::probe_landlock());
    sandbox::SeccompProgram::compile_no_network().install();
  } catch (const sandbox::SetupError& e) {
    die(e.what());
  }
  char* fallback[] = {const_cast<char*>(real.c_str()), nullptr};
  ::execv(real.c_str(), argc > 0 ? argv : fallback);
  die("cannot execute " + real + ": " + std::strerror(errno));
}
