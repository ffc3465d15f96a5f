// mpes-bench-floor: the physical floor of a sandboxed run on this machine, for bench/run.sh.
//
//   mpes-bench-floor [--python PATH] [--preload A,B] [--code TEXT] [--expect TEXT]
//                    [--network on|off] [--bwrap PATH] [--runs N]
//   mpes-bench-floor --page-touch [--pages N] [--repeat N]
//   mpes-bench-floor --wake-up [--samples N]
//
// The first form probes the interpreter as the server does (engine::probe_interpreter), starts
// mpes-bench-floor-run (next to this binary) inside the very bubblewrap sandbox a zygote for that
// interpreter gets (engine::describe_zygote_command: same builder, binds, /etc allowlist, account
// files, environment; as uid 65534 when started as root, as the server does), and relays: each
// line "N" on stdin asks for N runs, each answered by one JSON line on stdout (see
// floor_run.cpp). With --runs N, one batch and exit. Its diagnostics go to stderr.
// The second form prints one JSON line: what a fresh page, a copy-on-write fault and a first
// read after fork cost here (page_touch.h). The third, one JSON line: what waking a sleeping
// process costs here, on the CPU of its waker and on another (wake_up.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/floor/page_touch.h"
#include "bench/floor/wake_up.h"
#include "engine/interpreters/probe.h"
#include "engine/pool/zygote_process.h"
#include "sandbox/bwrap_command.h"
#include "sandbox/memfd.h"
#include "sandbox/path_search.h"
#include "sandbox/process.h"
#include "sandbox/user_network.h"
#include "sandbox/unique_fd.h"

namespace {

using sandbox::UniqueFd;

constexpr const char* kZygoteInside = "/run/mpes/zygote";  // where the builder puts the program

struct Options {
  std::string python = "/usr/bin/python3";
  std::string preload;
  std::string code = "print(sum(range(1000)))\n";
  std::string expect = "499500";
  std::string network = "on";
  std::string bwrap;
  std::string runs;
  bool page_touch = false;
  long pages = 4096;
  long repeat = 5;
  bool wake_up = false;
  long samples = 30;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "mpes-bench-floor: %s\n"
               "usage: mpes-bench-floor [--python PATH] [--preload A,B] [--code TEXT] [--expect TEXT] "
               "[--network on|off] [--bwrap PATH] [--runs N]\n"
               "       mpes-bench-floor --page-touch [--pages N] [--repeat N]\n"
               "       mpes-bench-floor --wake-up [--samples N]\n",
               problem.c_str());
  std::exit(2);
}

long positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 1) usage("bad number for " + flag + ": " + text);
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--page-touch") {
      o.page_touch = true;
      continue;
    }
    if (flag == "--wake-up") {
      o.wake_up = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") usage("the floor of a sandboxed run, for bench/run.sh");
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--python") o.python = value;
    else if (flag == "--preload") o.preload = value;
    else if (flag == "--code") o.code = value;
    else if (flag == "--expect") o.expect = value;
    else if (flag == "--network") {
      if (value != "on" && value != "off") usage("--network takes on or off");
      o.network = value;
    } else if (flag == "--bwrap") o.bwrap = value;
    else if (flag == "--runs") o.runs = std::to_string(positive(flag, value));
    else if (flag == "--pages") o.pages = positive(flag, value);
    else if (flag == "--repeat") o.repeat = positive(flag, value);
    else if (flag == "--samples") o.samples = positive(flag, value);
    else usage("unknown option " + flag);
  }
  return o;
}

// One JSON line on stdout saying why the floor cannot run (the harness reads it).
int refuse(const std::string& why) {
  const std::string line = nlohmann::json{{"error", why}}.dump() + "\n";
  [[maybe_unused]] const ssize_t n = ::write(1, line.data(), line.size());
  std::fprintf(stderr, "mpes-bench-floor: %s\n", why.c_str());
  return 1;
}

std::string own_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  const std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

// Copies whatever the sandboxed process writes on its stdout and stderr to our stderr, until it
// has closed both; then its exit status.
int relay_until_exit(sandbox::Process& process) {
  std::vector<int> open_fds = {process.output().get(), process.error_output().get()};
  while (!open_fds.empty()) {
    std::vector<pollfd> fds;
    for (int fd : open_fds) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0) {
        [[maybe_unused]] const ssize_t w = ::write(2, buf, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        open_fds.erase(std::remove(open_fds.begin(), open_fds.end(), p.fd), open_fds.end());
      }
    }
  }
  const int status = process.wait();
  if (const std::string why = process.start_error(); !why.empty()) {
    return refuse("bubblewrap did not start: " + why);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::fprintf(stderr, "mpes-bench-floor: the sandbox was killed by signal %d\n", WTERMSIG(status));
  return 1;
}

int run_floor(const Options& o) {
  std::string error;
  const auto interpreter = engine::probe_interpreter(o.python, &error);
  if (!interpreter) return refuse("cannot probe the interpreter: " + error);
  if (!interpreter->shared()) {
    return refuse(o.python + " has no shared libpython: the floor embeds the interpreter as the zygote does");
  }
  const std::string runner = own_dir() + "/mpes-bench-floor-run";
  if (::access(runner.c_str(), X_OK) != 0) {
    return refuse(runner + " is missing (it is built next to mpes-bench-floor)");
  }
  const std::string bwrap = !o.bwrap.empty() ? o.bwrap : sandbox::find_executable("bwrap").value_or("");
  if (bwrap.empty() || ::access(bwrap.c_str(), X_OK) != 0) {
    return refuse("bubblewrap (bwrap) is not installed: the floor runs inside the zygote's sandbox");
  }

  // The zygote's command line for this interpreter, with our program and arguments in its place.
  engine::ZygoteLaunch launch;
  launch.interpreter = *interpreter;
  launch.policy.network = o.network == "on";
  launch.zygote_path = runner;
  launch.bwrap_path = bwrap;
  const engine::ZygoteCommand zygote = engine::describe_zygote_command(launch);
  std::vector<std::string> argv = zygote.argv;
  const auto dash = std::find(argv.begin(), argv.end(), "--");
  if (dash == argv.end() || dash + 1 == argv.end() || *(dash + 1) != kZygoteInside) {
    return refuse("the zygote's bubblewrap command has an unexpected shape (no '-- " + std::string(kZygoteInside) + "')");
  }
  argv.erase(dash + 2, argv.end());
  const engine::Interpreter& in = *interpreter;
  // The runs' namespaces are the server's: with --network on, where the server gives each run a
  // network namespace of its own (pasta and nft, and root or an open /dev/net/tun: engine::plan_run_network), so does the
  // floor (without the link to a user-mode network, which is the server's own work).
  std::string run_network = o.network;
  if (o.network == "on" && engine::plan_run_network(sandbox::Backend::native, true, sandbox::UserNetwork::unavailable_reason(),
                                                    sandbox::UserNetwork::find_pasta(),
                                                    sandbox::UserNetwork::find_nft())
                               .per_run) {
    run_network = "own";
  }
  for (const std::string& arg :
       {std::string("--libpython"), in.libpython, std::string("--home"), in.base_prefix.empty() ? in.prefix : in.base_prefix,
        std::string("--sys-path"), join(in.sys_path, '\n'), std::string("--preload"), o.preload,
        std::string("--code"), o.code, std::string("--expect"), o.expect, std::string("--network"), run_network,
        std::string("--commands-fd"), std::string("3"), std::string("--report-fd"), std::string("6")}) {
    argv.push_back(arg);
  }
  if (!o.runs.empty()) {
    argv.push_back("--runs");
    argv.push_back(o.runs);
  }

  try {
    // As the zygote is started: control socket on 3 (here: the commands), passwd and group on 4
    // and 5, and the reports on 6.
    UniqueFd passwd = sandbox::sealed_memfd("passwd", sandbox::minimal_passwd());
    UniqueFd group = sandbox::sealed_memfd("group", sandbox::minimal_group());
    UniqueFd no_commands;
    int commands = 0;
    if (!o.runs.empty()) {
      no_commands.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      commands = no_commands.get();
    }
    sandbox::ProcessSpec spec;
    spec.argv = argv;
    spec.env = zygote.env;
    spec.fds = {commands, passwd.get(), group.get(), 1};
    if (::geteuid() == 0) {
      spec.run_as = sandbox::Identity{launch.unprivileged_uid, launch.unprivileged_gid};
      // Every host path bound into the sandbox must be reachable by that uid.
      for (std::size_t i = 0; i + 2 < argv.size() && argv[i] != "--"; ++i) {
        if (argv[i] != "--ro-bind") continue;
        char real[PATH_MAX];
        if (::realpath(argv[i + 1].c_str(), real) != nullptr) spec.reachable_paths.emplace_back(real);
      }
    }
    sandbox::Process process = sandbox::Process::spawn(spec);
    return relay_until_exit(process);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
}

}  // namespace

// One JSON line on stdout: what `measure` found, or why it could not.
template <typename Measure>
int print_measure(Measure measure) {
  try {
    const std::string line = measure().dump() + "\n";
    [[maybe_unused]] const ssize_t n = ::write(1, line.data(), line.size());
    return 0;
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
}

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  if (options.page_touch) {
    return print_measure([&] {
      return floor_bench::measure_page_touch(static_cast<std::size_t>(options.pages), static_cast<int>(options.repeat));
    });
  }
  // After 20 ms of sleep: what a call that follows an agent's pause meets on every hop.
  if (options.wake_up) {
    return print_measure([&] { return floor_bench::measure_wake_up(static_cast<int>(options.samples), 20); });
  }
  return run_floor(options);
}
