#include "sandbox/probe.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "sandbox/path_search.h"
#include "sandbox/process.h"
#include "sandbox/read_file.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

namespace sandbox {
namespace {

constexpr unsigned kNobody = 65534;
constexpr const char* kUnshare = "/usr/bin/unshare";

// Runs argv (absolute path first) with stdin from /dev/null and stdout+stderr together, as
// uid/gid 65534 when `as_nobody`; killed (its group) after `timeout`.
ProcessResult run_command(const std::vector<std::string>& argv, bool as_nobody,
                          std::chrono::milliseconds timeout) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.output = Output::merged;
  if (as_nobody) spec.run_as = Identity{kNobody, kNobody};
  spec.die_with_parent = true;
  spec.timeout_ms = static_cast<int>(timeout.count());
  spec.max_capture = 65536;
  try {
    return run_process(spec);
  } catch (const SpawnError& e) {
    ProcessResult failed;
    failed.error = e.what();
    failed.out = failed.error;  // what the diagnosis quotes
    return failed;
  }
}

// A one-value procfs file (/proc/sys/...), its trailing newline dropped.
std::optional<std::string> read_small(const std::string& path) {
  auto s = read_file(path, 4096);
  if (!s) return std::nullopt;
  while (!s->empty() && (s->back() == '\n' || s->back() == ' ')) s->pop_back();
  return s;
}

std::string first_line(const std::string& text) {
  auto s = text.substr(0, text.find('\n'));
  return s;
}

std::string find_true() {
  for (const char* p : {"/usr/bin/true", "/bin/true"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "/usr/bin/true";
}

// Installs the filter in a forked child and checks it denies ptrace(TRACEME) while getpid
// still works: proves the kernel accepts and enforces our program.
bool seccomp_works(std::string& why) {
  SeccompProgram program;
  try {
    program = SeccompProgram::compile(Policy{});
  } catch (const SetupError& e) {
    why = e.what();
    return false;
  }
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program.bpf().size() / sizeof(sock_filter));
  prog.filter = reinterpret_cast<sock_filter*>(const_cast<std::uint8_t*>(program.bpf().data()));
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) ::_exit(2);
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0UL, 0UL) != 0) ::_exit(3);
    errno = 0;
    const long r = ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    if (r == 0 || errno != EPERM) ::_exit(4);
    ::_exit(::getpid() > 0 ? 0 : 5);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    why = "the kernel refused the seccomp filter (CONFIG_SECCOMP_FILTER missing?)";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
    why = "the seccomp filter loaded but did not deny ptrace";
  } else {
    why = "the seccomp self-test failed (status " + std::to_string(status) + ")";
  }
  return false;
}

void diagnose_userns(ProbeResult& r, const std::string& bwrap_output) {
  const std::string said = first_line(bwrap_output);
  if (read_small("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").value_or("0") == "1") {
    r.problem = "AppArmor restricts unprivileged user namespaces (Ubuntu >= 23.10), so bubblewrap "
                "cannot create its sandbox (bwrap: " + said + ")";
    r.fix = "either `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (persist it in "
            "/etc/sysctl.d/60-userns.conf), or give bwrap its own AppArmor profile: write "
            "/etc/apparmor.d/bwrap containing `abi <abi/4.0>, include <tunables/global> profile "
            "bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` and run "
            "`sudo apparmor_parser -r /etc/apparmor.d/bwrap`";
    return;
  }
  if (read_small("/proc/sys/kernel/unprivileged_userns_clone").value_or("1") == "0") {
    r.problem = "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0; "
                "bwrap: " + said + ")";
    r.fix = "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (persist it in "
            "/etc/sysctl.d/60-userns.conf)";
    return;
  }
  if (read_small("/proc/sys/user/max_user_namespaces").value_or("1") == "0") {
    r.problem = "user namespaces are disabled (user.max_user_namespaces=0; bwrap: " + said + ")";
    r.fix = "`sudo sysctl -w user.max_user_namespaces=15000` (persist it in /etc/sysctl.d/)";
    return;
  }
  r.problem = "bubblewrap could not create a user namespace sandbox (bwrap: " + said + ")";
  r.fix = "inside a container, start it with `--security-opt seccomp=unconfined --security-opt "
          "apparmor=unconfined` (Docker) or an equivalent that allows user namespaces; if the "
          "host itself is already the isolation boundary, start the server with "
          "`--sandbox-backend none`";
}

}  // namespace

std::string find_bwrap() {
  if (auto found = find_executable("bwrap")) return *found;
  for (const char* p : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}) {
    if (auto found = find_executable(p)) return *found;
  }
  return "";
}

ProbeResult probe_host(const Policy& policy) {
  return probe_host(policy, assess_cgroups(find_cgroup_hierarchies()));
}

ProbeResult probe_host(const Policy& policy, const CgroupSetup& cgroups) {
  return probe_host(policy, cgroups, find_bwrap());
}

ProbeResult probe_host(const Policy& policy, const CgroupSetup& cgroups,
                       const std::string& bwrap_path) {
  using namespace std::chrono_literals;
  ProbeResult r;
  const bool root = ::geteuid() == 0;

  utsname uts{};
  if (::uname(&uts) == 0) r.details.emplace_back("kernel", uts.release);
  r.details.emplace_back("server uid", std::to_string(::geteuid()));

  r.bwrap_path = bwrap_path;
  if (r.bwrap_path.empty()) {
    r.problem = "bubblewrap (bwrap) is not installed";
    r.fix = "install the bubblewrap package: `sudo apt-get install bubblewrap` (Debian/Ubuntu), "
            "`sudo dnf install bubblewrap` (Fedora), `sudo pacman -S bubblewrap` (Arch)";
  } else {
    auto version = run_command({r.bwrap_path, "--version"}, false, 5s);
    if (version.ok()) {
      std::string v = first_line(version.out);
      if (auto sp = v.rfind(' '); sp != std::string::npos) v = v.substr(sp + 1);
      r.bwrap_version = v;
    }
    auto help = run_command({r.bwrap_path, "--help"}, false, 5s);
    r.bwrap_disable_userns = help.out.find("--disable-userns") != std::string::npos;

    // The sandbox as the zygote gets it: every namespace, fresh /proc; as uid 65534 when root
    // (the zygote never holds host root).
    std::vector<std::string> argv = {r.bwrap_path, "--unshare-all", "--die-with-parent",
                                     "--new-session", "--ro-bind", "/", "/", "--proc", "/proc",
                                     "--dev", "/dev", "--", find_true()};
    auto sandboxed = run_command(argv, root, 10s);
    r.userns_works = sandboxed.ok();
    r.details.emplace_back("bwrap test", std::string(r.userns_works ? "ok" : "failed") +
                                             (root ? " (as uid 65534)" : ""));
    if (!r.userns_works) {
      diagnose_userns(r, sandboxed.timed_out ? "timed out" : sandboxed.out);
    } else if (::access(kUnshare, X_OK) == 0) {
      // Each run's child clones new user+pid+mount namespaces inside the zygote's sandbox.
      argv.insert(argv.end() - 1, {kUnshare, "--user", "--pid", "--mount", "--fork"});
      auto nested = run_command(argv, root, 10s);
      r.nested_userns_checked = true;
      r.nested_userns_works = nested.ok();
      r.details.emplace_back("nested namespaces", r.nested_userns_works ? "ok" : "failed");
      if (!r.nested_userns_works) {
        r.problem = "bubblewrap works, but a user namespace cannot be created inside it, as each "
                    "run needs (unshare: " +
                    first_line(nested.timed_out ? "timed out" : nested.out) + ")";
        r.fix = "allow nested user namespaces: `sudo sysctl -w user.max_user_namespaces=15000`; "
                "under an AppArmor or SELinux policy for bwrap, allow `userns` for its children";
      }
    } else {
      r.details.emplace_back("nested namespaces", "not checked (no /usr/bin/unshare)");
    }
  }

  std::string seccomp_problem;
  r.seccomp_available = seccomp_works(seccomp_problem);
  if (!r.seccomp_available && r.problem.empty()) {
    r.problem = "seccomp filtering is unavailable: " + seccomp_problem;
    r.fix = "run on a kernel built with CONFIG_SECCOMP_FILTER=y (every mainstream distribution "
            "kernel is); inside a container, do not disable seccomp filter loading";
  }

  r.cgroup_mode = cgroups.describe();
  if (!cgroups.note.empty()) r.details.emplace_back("cgroups", cgroups.note);
  const Limits& l = policy.limits;
  const auto mib = [](std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
  r.memory_limit_mechanism =
      cgroups.limits_memory()
          ? cgroups.memory_mechanism() + " (" + mib(l.memory_bytes) + " per run)"
          : "RLIMIT_DATA (" + mib(l.memory_bytes) + " per process; no usable memory cgroup)";
  r.process_limit_mechanism =
      cgroups.limits_processes()
          ? cgroups.process_mechanism() + " (" + std::to_string(l.max_processes) + " per run)"
          : "RLIMIT_NPROC (" + std::to_string(l.max_processes) +
                " per run user namespace; no usable pids cgroup)";
  r.file_size_limit_mechanism = "RLIMIT_FSIZE (" + mib(l.file_size_bytes) + ")";
  r.cpu_limit_mechanism =
      "RLIMIT_CPU (" +
      (l.cpu_seconds > 0 ? std::to_string(l.cpu_seconds) + " s" : std::string("the run's timeout")) +
      ")";
  r.details.emplace_back("open files", "RLIMIT_NOFILE (" + std::to_string(l.open_files) + ")");
  r.details.emplace_back("core dumps", "off (RLIMIT_CORE 0)");
  return r;
}

}  // namespace sandbox
