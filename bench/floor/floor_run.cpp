// mpes-bench-floor-run: the floor's runs, started by mpes-bench-floor inside the same bubblewrap
// sandbox as a zygote (never by hand). It loads the interpreter's libpython as the zygote does
// (engine/zygote/libpython.h), initialises it once, imports the preloads, gc.freeze(); then per
// run: clone into the run's namespaces (sandbox::run_namespace_flags), the run's id maps and
// mounts (sandbox::prepare_run_namespace: tmpfs work dir, /tmp, /dev/shm, a fresh /proc), the
// code, stdout to a pipe read to EOF here, the child reaped. Nothing else: no second process, no
// identity change, no rlimits, no seccomp, no protocol. That is the floor a server run is
// compared with.
//
// Commands: lines "N" on --commands-fd (N runs each); one JSON line per batch on --report-fd:
//   {"samples_ns": [...], "errors": E, "first_error": "...", "cpu_us": C, "minflt": F, ...}
// With --runs N: one batch, no commands. The first line on --report-fd says it is ready (or why
// not: {"error": "..."}).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/zygote/libpython.h"
#include "sandbox/child_setup.h"
#include "sandbox/namespaces.h"
#include "sandbox/policy.h"
#include "sandbox/unique_fd.h"

namespace {

using sandbox::UniqueFd;

constexpr int kChildSetupFailed = 125;

struct Options {
  std::string libpython;
  std::string home;
  std::string sys_path;  // newline-separated; "" = what the interpreter computes
  std::string preload;   // comma-separated
  std::string code = "print(sum(range(1000)))\n";
  std::string expect = "499500";
  bool own_network = false;  // --network off or own: a network namespace per run (loopback up)
  int commands_fd = 0;
  int report_fd = 1;
  long runs = 0;  // > 0: one batch of this many, no commands
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "mpes-bench-floor-run: %s\nusage: mpes-bench-floor-run --libpython PATH --home PREFIX "
               "[--sys-path DIRS] [--preload A,B] [--code TEXT] [--expect TEXT] [--network on|off|own] "
               "[--commands-fd N] [--report-fd N] [--runs N]\n(started by mpes-bench-floor)\n",
               problem.c_str());
  std::exit(2);
}

long number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0) usage("bad number for " + flag + ": " + text);
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--libpython") o.libpython = value;
    else if (flag == "--home") o.home = value;
    else if (flag == "--sys-path") o.sys_path = value;
    else if (flag == "--preload") o.preload = value;
    else if (flag == "--code") o.code = value;
    else if (flag == "--expect") o.expect = value;
    else if (flag == "--network") {
      if (value != "on" && value != "off" && value != "own") usage("--network takes on, off or own");
      o.own_network = value != "on";
    }
    else if (flag == "--commands-fd") o.commands_fd = static_cast<int>(number(flag, value));
    else if (flag == "--report-fd") o.report_fd = static_cast<int>(number(flag, value));
    else if (flag == "--runs") o.runs = number(flag, value);
    else usage("unknown option " + flag);
  }
  if (o.libpython.empty() || o.home.empty()) usage("--libpython and --home are required");
  return o;
}

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void write_line(int fd, const nlohmann::json& j) {
  const std::string line = j.dump() + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// A Python string literal of `text` (for the few statements built here).
std::string py_literal(const std::string& text) {
  std::string out = "'";
  for (const unsigned char c : text) {
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

int count_tasks() {
  int n = 0;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "Threads: %d", &n) == 1) break;
    }
    std::fclose(f);
  }
  return n;
}

struct Usage {
  std::int64_t cpu_us = 0;
  std::int64_t minflt = 0;
  std::int64_t child_minflt = 0;
  std::int64_t nvcsw = 0;
  std::int64_t nivcsw = 0;
};

std::int64_t cpu_us(const rusage& r) {
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000LL + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
}

Usage usage_now() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  Usage u;
  u.cpu_us = cpu_us(self) + cpu_us(children);
  u.minflt = self.ru_minflt;
  u.child_minflt = children.ru_minflt;
  u.nvcsw = self.ru_nvcsw + children.ru_nvcsw;
  u.nivcsw = self.ru_nivcsw + children.ru_nivcsw;
  return u;
}

class Floor {
 public:
  Floor(Options options, engine::LibPython py) : options_(std::move(options)), py_(py) {}

  // Initialises and warms the interpreter; "" or what went wrong.
  std::string boot();
  // N runs; the batch's JSON report.
  nlohmann::json batch(long runs);
  std::string python_version() const {
    const std::string v = py_.Py_GetVersion();
    return v.substr(0, v.find(' '));
  }

 private:
  struct Outcome {
    std::int64_t ns = 0;
    std::optional<std::string> error;
  };
  Outcome run_once();
  [[noreturn]] void child(int out_fd);

  Options options_;
  engine::LibPython py_;
  sandbox::ChildSpec spec_;
  void* flush_fn_ = nullptr;
};

std::string Floor::boot() {
  py_.Py_InitializeEx(1);
  if (!py_.Py_IsInitialized()) return "the interpreter failed to initialise (PYTHONHOME=" + options_.home + ")";
  std::string setup = "import sys, gc\n";
  if (!options_.sys_path.empty()) {
    setup += "sys.path[:] = [p for p in " + py_literal(options_.sys_path) + ".split('\\n') if p]\n";
  }
  std::size_t start = 0;
  while (start <= options_.preload.size()) {
    std::size_t end = options_.preload.find(',', start);
    if (end == std::string::npos) end = options_.preload.size();
    const std::string name = options_.preload.substr(start, end - start);
    if (!name.empty()) setup += "import " + name + "\n";
    start = end + 1;
  }
  // Compiled once here: the run only calls it (its source is not parsed in every child).
  setup += "def _floor_flush():\n    sys.stdout.flush()\n    sys.stderr.flush()\n";
  setup += "gc.collect()\ngc.freeze()\n";
  if (py_.run(setup) != 0) return "the interpreter's set-up failed (traceback above): preloads " + options_.preload;
  flush_fn_ = py_.main_function("_floor_flush");
  if (flush_fn_ == nullptr) return "_floor_flush is missing after the set-up";
  const int tasks = count_tasks();
  if (tasks != 1) return "the process has " + std::to_string(tasks) + " threads after the set-up; forking it is unsafe";

  spec_.isolate = true;
  spec_.own_network = options_.own_network;
  spec_.outside_uid = ::getuid();
  spec_.outside_gid = ::getgid();
  const sandbox::Limits limits;  // the server's defaults
  spec_.limits = limits;
  spec_.mounts.tmpfs_bytes = limits.tmpfs_bytes;
  return "";
}

void Floor::child(int out_fd) {
  py_.PyOS_AfterFork_Child();
  try {
    sandbox::prepare_run_namespace(spec_);
  } catch (const std::exception& e) {
    const std::string line = std::string("floor: run setup failed: ") + e.what() + "\n";
    [[maybe_unused]] const ssize_t n = ::write(out_fd, line.data(), line.size());
    ::_exit(kChildSetupFailed);
  }
  if (::dup2(out_fd, 1) < 0) ::_exit(kChildSetupFailed);
  const int rc = py_.run(options_.code);
  const bool flushed = py_.call(flush_fn_);
  ::_exit(rc == 0 && flushed ? 0 : 1);
}

Floor::Outcome Floor::run_once() {
  Outcome outcome;
  const std::int64_t t0 = now_ns();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    outcome.error = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  UniqueFd rd(p[0]), wr(p[1]);
  int pidfd_raw = -1;
  py_.PyOS_BeforeFork();
  const pid_t pid = sandbox::clone_into(sandbox::run_namespace_flags(options_.own_network), &pidfd_raw);
  if (pid == 0) child(wr.get());
  const int clone_errno = errno;
  py_.PyOS_AfterFork_Parent();
  UniqueFd pidfd(pidfd_raw);
  if (pid < 0) {
    outcome.error = std::string("clone into new namespaces: ") + std::strerror(clone_errno);
    return outcome;
  }
  wr.reset();
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      if (out.size() < (1u << 20)) out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.ns = now_ns() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    outcome.error = (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                       : "killed by signal " + std::to_string(WTERMSIG(status))) +
                    ", output: " + out.substr(0, 300);
  } else if (out.find(options_.expect) == std::string::npos) {
    outcome.error = "output lacks " + options_.expect + ": " + out.substr(0, 300);
  }
  return outcome;
}

nlohmann::json Floor::batch(long runs) {
  std::vector<std::int64_t> samples;
  long errors = 0;
  std::string first_error;
  const Usage before = usage_now();
  const std::int64_t t0 = now_ns();
  for (long i = 0; i < runs; ++i) {
    const Outcome o = run_once();
    if (o.error) {
      if (errors++ == 0) first_error = *o.error;
    } else {
      samples.push_back(o.ns);
    }
  }
  const std::int64_t wall = now_ns() - t0;
  const Usage after = usage_now();
  return {{"samples_ns", samples},
          {"runs", runs},
          {"errors", errors},
          {"first_error", errors ? nlohmann::json(first_error) : nlohmann::json(nullptr)},
          {"wall_ns", wall},
          // This process and the runs it reaped: the CPU the floor spends per run.
          {"cpu_us", after.cpu_us - before.cpu_us},
          {"minflt_parent", after.minflt - before.minflt},
          {"minflt_children", after.child_minflt - before.child_minflt},
          {"context_switches", (after.nvcsw - before.nvcsw) + (after.nivcsw - before.nivcsw)}};
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can load a BLAS: one thread each, so the process stays forkable.
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                          "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"}) {
    ::setenv(var, "1", 1);
  }
  const Options options = parse(argc, argv);
  ::setenv("PYTHONHOME", options.home.c_str(), 1);
  ::setenv("PYTHONIOENCODING", "utf-8", 1);
  std::optional<Floor> floor;
  std::string error;
  try {
    floor.emplace(options, engine::LibPython::load(options.libpython));
    error = floor->boot();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    write_line(options.report_fd, {{"error", error}});
    return 1;
  }
  write_line(options.report_fd, {{"ready", true}, {"python", floor->python_version()}, {"own_network", options.own_network}});
  if (options.runs > 0) {
    write_line(options.report_fd, floor->batch(options.runs));
    return 0;
  }
  std::string pending;
  char buf[256];
  for (;;) {
    const ssize_t n = ::read(options.commands_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    pending.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      char* end = nullptr;
      const long runs = std::strtol(line.c_str(), &end, 10);
      if (end == line.c_str() || *end != '\0' || runs < 1) {
        write_line(options.report_fd, {{"error", "bad command " + line + " (expected a number of runs)"}});
        continue;
      }
      write_line(options.report_fd, floor->batch(runs));
    }
  }
}
