// mcp-python-exec-sandbox-build-python: stands in for the interpreter inside an installer's
// sandbox in the pass that builds from source (engine/environments/build_python.h). In order:
// - with kFrontEndFlag first (pip's own process, started so by the server), or already in a
//   build's domain (kConfinedVariable): the real interpreter at once, nothing added;
// - no_new_privs (bwrap set it already; Landlock and a filter need it);
// - a directory of its own beneath /tmp (its TMPDIR, TMP, TEMP and HOME from now on);
// - a Landlock domain (sandbox/landlock.h) that writes only that directory, the devices and the
//   directories the front-end made for this build (build_writable_dirs); with --network off
//   (kNoNetworkVariable) no TCP either, and a seccomp filter refusing every socket family but
//   AF_UNIX (sandbox/seccomp_filter.h);
// - then the real interpreter with this process's argv.
// Any failure ends here with status 127: a build never runs with what it must not have. Where
// the kernel has no Landlock the build's writes are not confined (the server says so in its log
// and in check_environment); the network is still taken away by the filter.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/environments/build_python.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "mcp-python-exec-sandbox-build-python: %s\n", what.c_str());
  std::_Exit(127);
}

[[noreturn]] void exec_real(const std::string& real, char** argv) {
  char* fallback[] = {const_cast<char*>(real.c_str()), nullptr};
  ::execv(real.c_str(), argv[0] != nullptr ? argv : fallback);
  die("cannot execute " + real + ": " + std::strerror(errno));
}

void set_variable(const char* name, const std::string& value) {
  if (::setenv(name, value.c_str(), 1) != 0) die(std::string("setenv ") + name + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) die("cannot read /proc/self/exe: " + ec.message());
  const std::string real = engine::deps::real_interpreter_path(self.string());
  if (real.empty()) die("no real interpreter for " + self.string());

  if (argc >= 2 && std::strcmp(argv[1], engine::deps::kFrontEndFlag) == 0) {
    // The front-end: the same argv without the flag.
    for (int i = 1; i < argc; ++i) argv[i] = argv[i + 1];
    exec_real(real, argv);
  }
  if (std::getenv(engine::deps::kConfinedVariable) != nullptr) exec_real(real, argv);

  if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) {
    die(std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno));
  }
  std::vector<std::string> args(argv, argv + argc);
  std::string cwd;
  if (char* dir = ::getcwd(nullptr, 0); dir != nullptr) {
    cwd = dir;
    std::free(dir);
  }
  std::string own = std::string("/tmp/") + engine::deps::kPrivateDirPrefix + "XXXXXX";
  if (::mkdtemp(own.data()) == nullptr) die("cannot make the build's directory " + own + ": " + std::strerror(errno));

  sandbox::BuildDomain domain;
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  domain.writable_dirs = engine::deps::build_writable_dirs(args, cwd, "/tmp", environment);
  domain.writable_dirs.push_back(own);
  for (const auto& dir : engine::deps::build_writable_device_dirs()) domain.writable_dirs.push_back(dir);
  domain.writable_files = engine::deps::build_writable_devices();
  const char* no_network = std::getenv(engine::deps::kNoNetworkVariable);
  domain.network = no_network == nullptr || *no_network == '\0';
  try {
    sandbox::apply_build_domain(sandbox::probe_landlock(), domain);
    if (!domain.network) sandbox::SeccompProgram::compile_no_network().install();
  } catch (const sandbox::SetupError& e) {
    die(e.what());
  }
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "HOME"}) set_variable(name, own);
  set_variable(engine::deps::kConfinedVariable, "1");
  exec_real(real, argv);
}
