// The one process runner: what a child gets (argv, environment, fds, identity, staged paths),
// what the parent gets back (bounded output, lines, status), and that nothing is left behind
// (the whole group killed at a deadline or by a kill switch, every child reaped).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/process.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using sandbox::ProcessSpec;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = {"PATH=/usr/bin:/bin"};
  return spec;
}

// The whole of a (small, /proc) file; "" when it cannot be opened.
std::string read_file(const std::string& path) {
  sandbox::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string text;
  char buffer[4096];
  for (ssize_t n; fd && (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// True once `pid` is no longer a live process of ours or anyone's: gone, or a zombie waiting for
// whoever inherited it (it runs nothing any more).
bool ended(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (text.empty()) return true;
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() &&
        (text[close + 2] == 'Z' || text[close + 2] == 'X')) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// True when `pid` is not a child of this process waiting to be reaped.
bool reaped(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 &&
         errno == ECHILD;
}

std::vector<pid_t> pids_in(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  for (long pid; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

}  // namespace

// ---- what the child gets

TEST_CASE("run_process captures output, lines and the exit code", "[process]") {
  auto spec = shell("echo out1; echo err1 >&2; printf 'out2'; exit 3");
  std::vector<std::string> lines;
  auto r = sandbox::run_process(spec, [&](std::string_view l) { lines.emplace_back(l); });
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.ok());
  CHECK(r.out == "out1\nout2");
  CHECK(r.err == "err1\n");
  CHECK(contains(lines, "out1"));
  CHECK(contains(lines, "err1"));
  CHECK(contains(lines, "out2"));  // the last line, without its end, at the end
}

TEST_CASE("merged output keeps the order both streams were written in", "[process]") {
  auto spec = shell("echo one; echo two >&2; echo three");
  spec.output = sandbox::Output::merged;
  auto r = sandbox::run_process(spec);
  CHECK(r.ok());
  CHECK(r.out == "one\ntwo\nthree\n");
  CHECK(r.err.empty());
}

TEST_CASE("captured output is bounded, the tail kept; every line still reaches the callback",
          "[process]") {
  auto spec = shell("i=0; while [ $i -lt 20000 ]; do echo \"line $i\"; i=$((i+1)); done; printf 'end\\r\\n'");
  spec.max_capture = 1000;
  std::size_t lines = 0;
  std::string last;
  auto r = sandbox::run_process(spec, [&](std::string_view l) {
    ++lines;
    last = l;
  });
  REQUIRE(r.ok());
  CHECK(r.out.size() == 1000);
  CHECK(r.out.ends_with("\nline 19998\nline 19999\nend\r\n"));
  CHECK(lines == 20001);
  CHECK(last == "end");  // without "\r\n"
}

TEST_CASE("the child gets exactly the environment it was given", "[process]") {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env = {"ONLY=1", "SECOND=two words"};
  auto r = sandbox::run_process(spec);
  REQUIRE(r.ok());
  CHECK(r.out == "ONLY=1\nSECOND=two words\n");
}

TEST_CASE("the child gets exactly the fds it was given, at 3, 4, ...", "[process]") {
  // High numbers, so that no fd the child opens itself (ls's directory fd) is mistaken for them.
  sandbox::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(null_fd);
  sandbox::UniqueFd leaked(::fcntl(null_fd.get(), F_DUPFD_CLOEXEC, 100));
  sandbox::UniqueFd passed(::fcntl(null_fd.get(), F_DUPFD_CLOEXEC, 110));
  // Without close-on-exec, the way a careless library opens files: it must still not leak.
  sandbox::UniqueFd careless(::fcntl(null_fd.get(), F_DUPFD, 120));
  REQUIRE((leaked && passed && careless));
  ProcessSpec spec;
  spec.argv = {"/bin/ls", "-1", "/proc/self/fd"};
  spec.fds = {passed.get()};
  auto r = sandbox::run_process(spec);
  REQUIRE(r.ok());
  // 0-2, the passed fd as 3, and the directory ls itself opened to list them: nothing else.
  std::set<long> fds;
  std::istringstream in(r.out);
  for (long fd; in >> fd;) fds.insert(fd);
  CHECK(fds == std::set<long>{0, 1, 2, 3, 4});
  // The passed fd is the parent's /dev/null, and stdin is /dev/null too.
  spec.argv = {"/bin/sh", "-c", "readlink /proc/self/fd/0 /proc/self/fd/3"};
  auto links = sandbox::run_process(spec);
  CHECK(links.out == "/dev/null\n/dev/null\n");
}

TEST_CASE("the child starts in its own process group, with default signals, in its cwd", "[process]") {
  // The server ignores SIGPIPE; a child must not inherit that.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(::sigaction(SIGPIPE, &ignore, &old) == 0);
  auto spec = shell("echo $$; cut -d' ' -f5 /proc/$$/stat; grep SigIgn /proc/self/status; pwd");
  spec.cwd = "/usr";
  auto r = sandbox::run_process(spec);
  ::sigaction(SIGPIPE, &old, nullptr);
  REQUIRE(r.ok());
  std::istringstream in(r.out);
  long pid = 0, pgid = 0;
  std::string sig_label, sig_mask, cwd;
  in >> pid >> pgid >> sig_label >> sig_mask >> cwd;
  CHECK(pid == pgid);
  CHECK(pgid != ::getpgrp());
  const unsigned long long ignored = std::stoull(sig_mask, nullptr, 16);
  CHECK((ignored & (1ULL << (SIGPIPE - 1))) == 0);
  CHECK(cwd == "/usr");
}

TEST_CASE("as root, the child runs as the identity it is given", "[process]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: not root, so there is no identity to drop to");
    return;
  }
  auto spec = shell("id -u; id -g; id -G; grep CapEff /proc/self/status");
  spec.run_as = sandbox::Identity{65534, 65534};
  auto r = sandbox::run_process(spec);
  REQUIRE(r.ok());
  CHECK(r.out.rfind("65534\n65534\n65534\n", 0) == 0);  // no supplementary groups left
  CHECK(r.out.find("CapEff:\t0000000000000000") != std::string::npos);
}

TEST_CASE("as root, staged paths are reachable for the dropped identity, and only they",
          "[process]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: staging needs root");
    return;
  }
  fixtures::TempDir dir;
  const std::string closed = dir.path() + "/closed";   // 0700, as /root is
  const std::string shared = closed + "/shared";
  const std::string secret = closed + "/secret";
  REQUIRE(::mkdir(closed.c_str(), 0700) == 0);
  REQUIRE(::mkdir(shared.c_str(), 0755) == 0);
  REQUIRE(::mkdir(secret.c_str(), 0755) == 0);
  std::ofstream(shared + "/file") << "reached\n";
  std::ofstream(secret + "/file") << "must not be seen\n";
  auto spec = shell("cat " + shared + "/file; ls " + secret + " 2>&1 || echo hidden");
  spec.run_as = sandbox::Identity{65534, 65534};
  SECTION("without staging, the private parent stops it") {
    auto r = sandbox::run_process(spec);
    CHECK(r.out.find("reached") == std::string::npos);
  }
  SECTION("staged, it reaches the path but nothing else of the private parent") {
    spec.reachable_paths = {shared};
    auto r = sandbox::run_process(spec);
    INFO(r.err);
    CHECK(r.out.rfind("reached\n", 0) == 0);
    CHECK(r.out.find("must not be seen") == std::string::npos);
    CHECK(r.out.find("hidden") != std::string::npos);
    // The host's mount table is untouched.
    CHECK(read_file("/proc/self/mountinfo").find(closed) == std::string::npos);
  }
}

// ---- failures to start

TEST_CASE("run_process reports a program that cannot start", "[process]") {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  CHECK_THROWS_WITH(sandbox::run_process(spec),
                    Catch::Contains("/nonexistent/program") && Catch::Contains("No such file"));
  spec.argv = {"no-such-program-mpes"};
  CHECK_THROWS_WITH(sandbox::run_process(spec), Catch::Contains("no-such-program-mpes"));
  spec = shell("true");
  spec.cwd = "/nonexistent-dir";
  CHECK_THROWS_WITH(sandbox::run_process(spec), Catch::Contains("changing directory"));
  // Several at once: the one that cannot start says why, the others run.
  std::vector<ProcessSpec> specs = {shell("echo a"), ProcessSpec{}, shell("echo c")};
  specs[1].argv = {"/nonexistent/program"};
  auto results = sandbox::run_processes(specs, 2);
  REQUIRE(results.size() == 3);
  CHECK(results[0].out == "a\n");
  CHECK(results[1].error.find("/nonexistent/program") != std::string::npos);
  CHECK_FALSE(results[1].ok());
  CHECK(results[2].out == "c\n");
}

// ---- deadlines, kill switches, reaping

TEST_CASE("the deadline kills the whole group, grandchildren too, and reaps", "[process]") {
  auto spec = shell("echo $$; sleep 30 & echo $!; sleep 30");
  spec.timeout_ms = 300;
  auto r = sandbox::run_process(spec);
  CHECK(r.timed_out);
  CHECK(r.term_signal == SIGKILL);
  const auto pids = pids_in(r.out);
  REQUIRE(pids.size() == 2);
  CHECK(reaped(pids[0]));
  CHECK(ended(pids[1]));  // the background sleep went with its group

  // Closing its output does not take it off the clock.
  spec = shell("exec >&- 2>&-; sleep 30");
  spec.timeout_ms = 300;
  auto closed = sandbox::run_process(spec);
  CHECK(closed.timed_out);
  CHECK(closed.term_signal == SIGKILL);
}

TEST_CASE("what a finished run leaves in its group is killed", "[process]") {
  // The leader exits at once; its background child would live on for 30 s.
  auto r = sandbox::run_process(shell("sleep 30 & echo $!"));
  CHECK(r.ok());
  const auto pids = pids_in(r.out);
  REQUIRE(pids.size() == 1);
  CHECK(ended(pids[0]));
}

TEST_CASE("a kill switch pulled by another thread kills the group, now and later", "[process]") {
  sandbox::KillSwitch ks;
  auto spec = shell("echo $$; sleep 30 & echo $!; sleep 30");
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ks.kill();
  });
  auto k = sandbox::run_process(spec, {}, &ks);
  killer.join();
  CHECK(k.killed);
  CHECK_FALSE(k.ok());
  CHECK(k.term_signal == SIGKILL);
  const auto pids = pids_in(k.out);
  REQUIRE(pids.size() == 2);
  CHECK(reaped(pids[0]));
  CHECK(ended(pids[1]));

  // Pulled already: what starts under it is killed at once.
  auto later = sandbox::run_process(shell("sleep 30"), {}, &ks);
  CHECK(later.killed);
  CHECK(later.term_signal == SIGKILL);
  ks.reset();
  CHECK(sandbox::run_process(shell("true"), {}, &ks).ok());
}

TEST_CASE("several runs at once, each with its own deadline, results in order", "[process]") {
  fixtures::TempDir dir;
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < 6; ++i) {
    // Each counts the runs alive with it, then stays a moment.
    specs.push_back(shell("touch " + dir.path() + "/" + std::to_string(i) + "; ls " + dir.path() +
                          " | wc -l; sleep 0.2; rm " + dir.path() + "/" + std::to_string(i) +
                          "; echo " + std::to_string(i)));
  }
  specs[4] = shell("sleep 30");
  specs[4].timeout_ms = 200;
  auto results = sandbox::run_processes(specs, 3);
  REQUIRE(results.size() == 6);
  for (int i = 0; i < 6; ++i) {
    INFO(i);
    if (i == 4) {
      CHECK(results[i].timed_out);
      continue;
    }
    REQUIRE(results[i].ok());
    std::istringstream in(results[i].out);
    int alive = 0, index = -1;
    in >> alive >> index;
    CHECK(alive >= 1);
    CHECK(alive <= 3);  // never more than `parallel` at once
    CHECK(index == i);
  }
}

// ---- spawn only: the caller watches the process

TEST_CASE("a spawned process is watched through its pidfd and reaped by try_wait", "[process]") {
  auto process = sandbox::Process::spawn(shell("echo hello; exit 7"));
  REQUIRE(process.pidfd() >= 0);
  REQUIRE(wait_readable(process.pidfd(), 10000));
  const auto status = process.try_wait();
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 7);
  CHECK(process.reaped());
  CHECK(reaped(process.pid()));
  char buffer[64] = {};
  CHECK(::read(process.output().get(), buffer, sizeof buffer) == 6);
  CHECK(std::string(buffer) == "hello\n");
  CHECK(process.start_error().empty());
  // The fds the parent keeps are close-on-exec.
  for (int fd : {process.pidfd(), process.output().get(), process.error_output().get()}) {
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  }
}

TEST_CASE("a spawned process that could not exec says why once it has exited", "[process]") {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/zygote"};
  auto process = sandbox::Process::spawn(spec);  // does not wait for the exec
  REQUIRE(wait_readable(process.pidfd(), 10000));
  REQUIRE(process.try_wait());
  CHECK_THAT(process.start_error(), Catch::Contains("cannot run /nonexistent/zygote") &&
                                        Catch::Contains("No such file"));
}

TEST_CASE("destroying a Process kills its group and reaps it", "[process]") {
  pid_t leader = -1;
  pid_t background = -1;
  {
    auto process = sandbox::Process::spawn(shell("sleep 30 & echo $!; sleep 30"));
    leader = process.pid();
    REQUIRE(wait_readable(process.output().get(), 10000));
    char buffer[64] = {};
    REQUIRE(::read(process.output().get(), buffer, sizeof buffer) > 0);
    background = static_cast<pid_t>(std::stol(buffer));
    CHECK_FALSE(process.try_wait());  // still running
  }
  CHECK(reaped(leader));
  CHECK(ended(background));
}

TEST_CASE("a moved Process still owns its child", "[process]") {
  auto first = sandbox::Process::spawn(shell("sleep 30"));
  const pid_t pid = first.pid();
  sandbox::Process second = std::move(first);
  CHECK(second.pid() == pid);
  second.kill();
  const int status = second.wait();
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(reaped(pid));
}

TEST_CASE("the child sets the given resource limits before exec", "[process]") {
  auto spec = shell("ulimit -f; ulimit -c; ulimit -n");
  spec.rlimits = {{RLIMIT_FSIZE, 2048 * 512}, {RLIMIT_CORE, 0}, {RLIMIT_NOFILE, 77}};
  const auto r = sandbox::run_process(spec);
  REQUIRE(r.ok());
  CHECK(r.out == "2048\n0\n77\n");  // ulimit -f counts 512-byte blocks
}

TEST_CASE("a limit the child cannot set fails the start with the reason", "[process]") {
  auto spec = shell("true");
  spec.rlimits = {{RLIMIT_NOFILE, ~0ULL}};  // above the kernel's nr_open
  CHECK_THROWS_WITH(sandbox::run_process(spec), Catch::Contains("resource limits"));
}

TEST_CASE("the child joins the given cgroup fds first: what it writes there lands", "[process]") {
  // A pipe stands in for cgroup.procs: the child writes "0" (itself) into each before exec.
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  auto spec = shell("true");
  spec.cgroup_join_fds = {fds[1]};
  CHECK(sandbox::run_process(spec).ok());
  ::close(fds[1]);
  char buffer[8] = {};
  CHECK(::read(fds[0], buffer, sizeof buffer) == 1);
  CHECK(buffer[0] == '0');
  ::close(fds[0]);
}

TEST_CASE("the child joins the given user namespace, as its root, then the given network namespace",
          "[process]") {
  // A namespace holder: unshare(1) makes a user and a network namespace, maps this user to
  // its root, and waits.
  auto holder = sandbox::Process::spawn(shell("exec unshare --user --map-root-user --net sleep 60"));
  const std::string own = fs::read_symlink("/proc/self/ns/user").string();
  const std::string ns_dir = "/proc/" + std::to_string(holder.pid()) + "/ns/";
  std::string theirs;
  for (int i = 0; i < 200 && (theirs.empty() || theirs == own); ++i) {
    std::error_code ec;
    theirs = fs::read_symlink(ns_dir + "user", ec).string();
    if (theirs.empty() || theirs == own) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(theirs != own);
  const std::string their_net = fs::read_symlink(ns_dir + "net").string();
  sandbox::UniqueFd userns(::open((ns_dir + "user").c_str(), O_RDONLY | O_CLOEXEC));
  sandbox::UniqueFd netns(::open((ns_dir + "net").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(userns);
  REQUIRE(netns);

  ProcessSpec spec = shell("readlink /proc/self/ns/user /proc/self/ns/net; id -u; grep CapEff /proc/self/status");
  spec.userns_fd = userns.get();
  spec.netns_fd = netns.get();
  const auto r = sandbox::run_process(spec);
  REQUIRE(r.ok());
  // Its root, with capabilities there (not the none of an unprivileged uid after exec).
  CHECK(r.out.rfind(theirs + "\n" + their_net + "\n0\nCapEff:\t", 0) == 0);
  CHECK(r.out.find("CapEff:\t0000000000000000") == std::string::npos);

  // Not a user namespace: the start fails and says which step.
  sandbox::UniqueFd not_user(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  spec.userns_fd = not_user.get();
  spec.netns_fd = -1;
  CHECK_THROWS_WITH(sandbox::run_process(spec), Catch::Contains("joining its user namespace"));
}
