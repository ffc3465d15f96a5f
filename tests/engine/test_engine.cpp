// The engine through its public interface, with real zygotes (the one built next to this test
// binary) on the `none` backend, so the deadline, queue, cancel and shutdown logic is exercised
// without depending on user namespaces. Sandboxed runs are covered by e2e_tests/.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/engine.h"
#include "engine/execution/result_channel.h"
#include "engine/pool/zygote_process.h"

using namespace std::chrono_literals;

namespace {

struct Harness {
  asio::io_context io;
  std::unique_ptr<engine::Engine> engine;

  explicit Harness(unsigned max_concurrent = 0) {
    engine::EngineConfig config;
    config.policy.backend = sandbox::Backend::none;
    config.max_concurrent_runs = max_concurrent;
    config.max_output_bytes = 4096;
    engine = engine::make_engine(io, config);
    engine->start_warmup();
  }

  // Runs the loop until `done` holds (or fails the test after `limit`).
  template <typename Pred>
  void run_until(Pred done, std::chrono::seconds limit = 60s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= until) FAIL("the engine did not answer in time");
      io.run_for(20ms);
      if (io.stopped()) io.restart();
    }
  }

  std::shared_ptr<engine::Engine::RunHandle> start(const std::string& script, std::optional<engine::RunResult>& out,
                                                    int timeout = 30, int* calls = nullptr) {
    engine::RunRequest request;
    request.script = script;
    request.timeout_seconds = timeout;
    return engine->execute(request, {}, [&out, calls](engine::RunResult r) {
      if (calls) ++*calls;
      out = std::move(r);
    });
  }

  engine::RunResult run(const std::string& script, int timeout = 30) {
    std::optional<engine::RunResult> out;
    start(script, out, timeout);
    run_until([&] { return out.has_value(); });
    return *out;
  }

  ~Harness() {
    bool down = false;
    engine->shutdown([&] { down = true; });
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!down && std::chrono::steady_clock::now() < until) {
      io.run_for(20ms);
      if (io.stopped()) io.restart();
    }
    CHECK(down);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("engine: exit codes, signals and separate streams", "[engine]") {
  Harness h;
  auto r = h.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(7)");
  CHECK_FALSE(r.service_error);
  CHECK(r.stdout_stream.text == "out\n");
  CHECK(r.stderr_stream.text == "err\n");
  CHECK(r.exit_code == 7);
  CHECK(r.end_reason == engine::EndReason::exit);
  CHECK(r.sandbox == "none (unsandboxed)");
  CHECK(r.execution_path == "zygote");
  CHECK_FALSE(r.python_version.empty());

  r = h.run("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)");
  CHECK(r.exit_code == -15);
  CHECK(r.end_reason == engine::EndReason::signal);
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("engine: the value of the last expression comes through the result channel", "[engine]") {
  Harness h;
  auto r = h.run("x = 20\nx * 2 + 2\n");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_stream.text.empty());
  REQUIRE(r.return_value_repr);
  CHECK(*r.return_value_repr == "42");
  REQUIRE(r.return_value_json);
  CHECK(*r.return_value_json == 42);
  CHECK(r.usage.cpu_ms >= 0);

  r = h.run("print('no value')\nNone\n");
  CHECK(r.stdout_stream.text == "no value\n");
  CHECK_FALSE(r.return_value_repr);

  // A script that writes garbage to the channel, or closes it, still gets its normal result.
  r = h.run("import os\nos.write(5, b'garbage' * 1000)\nprint('ok')\n7\n");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_stream.text == "ok\n");
  CHECK_FALSE(r.return_value_repr);
  r = h.run("import os\nos.close(5)\nprint('closed')\n7\n");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_stream.text == "closed\n");
  CHECK_FALSE(r.return_value_repr);
}

TEST_CASE("engine: a run past its deadline is killed and answered with its output so far", "[engine]") {
  Harness h;
  h.run("pass");  // the zygote is warm: what follows measures the run, not the start
  const auto t0 = std::chrono::steady_clock::now();
  auto r = h.run("import time\nprint('before', flush=True)\ntime.sleep(60)", 1);
  const double elapsed = seconds_since(t0);
  CHECK_FALSE(r.service_error);
  CHECK(r.timed_out);
  CHECK(r.exit_code == -9);
  CHECK(r.end_reason == engine::EndReason::timeout);
  CHECK(r.stdout_stream.text == "before\n");
  CHECK(elapsed >= 1.0);
  CHECK(elapsed < 5.0);  // bounded by the server, not by the script's 60 s
  CHECK(r.duration_ms >= 1000);
}

TEST_CASE("engine: output beyond the limit is truncated with a marker", "[engine]") {
  Harness h;
  auto r = h.run("print('x' * 100000)");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_stream.text.size() <= 4096);
  CHECK(r.stdout_stream.dropped_bytes > 90000);
  CHECK(r.stdout_stream.text.find("bytes dropped") != std::string::npos);
}

TEST_CASE("engine: runs beyond the concurrency bound wait in the queue, none is dropped", "[engine]") {
  Harness h(1);
  const std::string script =
      "import time\nstart = time.monotonic()\ntime.sleep(0.3)\nprint(start, time.monotonic())";
  std::vector<std::optional<engine::RunResult>> out(3);
  for (auto& o : out) h.start(script, o);
  h.run_until([&] { return out[0] && out[1] && out[2]; });
  std::vector<std::pair<double, double>> spans;
  for (auto& o : out) {
    REQUIRE(o->exit_code == 0);
    std::istringstream in(o->stdout_stream.text);
    double a = 0, b = 0;
    in >> a >> b;
    spans.emplace_back(a, b);
  }
  // With one slot the runs never overlap, and they run in the order they came.
  CHECK(spans[1].first >= spans[0].second);
  CHECK(spans[2].first >= spans[1].second);
}

TEST_CASE("engine: cancel ends a queued or running run once, as cancelled", "[engine]") {
  Harness h(1);
  h.run("pass");
  std::optional<engine::RunResult> running, queued;
  int running_calls = 0, queued_calls = 0;
  auto a = h.start("import time\nprint('started', flush=True)\ntime.sleep(60)", running, 60, &running_calls);
  auto b = h.start("print('never')", queued, 60, &queued_calls);
  h.io.run_for(1s);
  h.io.restart();
  REQUIRE_FALSE(running);
  const auto t0 = std::chrono::steady_clock::now();
  b->cancel();
  a->cancel();
  h.run_until([&] { return running && queued; });
  CHECK(seconds_since(t0) < 3.0);
  CHECK(queued->end_reason == engine::EndReason::cancelled);
  CHECK(queued->stdout_stream.text.empty());
  CHECK(running->end_reason == engine::EndReason::cancelled);
  CHECK(running->stdout_stream.text == "started\n");
  a->cancel();  // cancelling again changes nothing
  h.io.run_for(300ms);
  h.io.restart();
  CHECK(running_calls == 1);
  CHECK(queued_calls == 1);
}

TEST_CASE("engine: shutdown ends the runs in flight and reaps the zygotes", "[engine]") {
  auto h = std::make_unique<Harness>();
  h->run("pass");
  std::optional<engine::RunResult> out;
  h->start("import time\ntime.sleep(60)", out, 60);
  h->io.run_for(500ms);
  h->io.restart();
  bool down = false;
  h->engine->shutdown([&] { down = true; });
  h->run_until([&] { return down && out.has_value(); }, 10s);
  CHECK(out->end_reason == engine::EndReason::cancelled);
  // After shutdown new runs are refused at once rather than queued forever.
  std::optional<engine::RunResult> late;
  h->start("print(1)", late);
  h->run_until([&] { return late.has_value(); }, 5s);
  CHECK(late->service_error.has_value());
}

TEST_CASE("engine: an unavailable Python version is a service error naming the available ones", "[engine]") {
  Harness h;
  engine::RunRequest request;
  request.script = "print(1)";
  request.python_version = "2.1";
  std::optional<engine::RunResult> out;
  h.engine->execute(request, {}, [&](engine::RunResult r) { out = std::move(r); });
  h.run_until([&] { return out.has_value(); });
  REQUIRE(out->service_error);
  CHECK(out->service_error->find("Python 2.1 is not available") != std::string::npos);
  CHECK(out->service_error->find("available: 3.") != std::string::npos);
  CHECK(out->end_reason == engine::EndReason::refused);
}

TEST_CASE("engine: an unmet requires-python is refused before anything runs", "[engine]") {
  Harness h;
  std::optional<engine::RunResult> out;
  engine::RunRequest request;
  request.script = "# /// script\n# requires-python = \">=3.99\"\n# ///\nprint(1)\n";
  h.engine->execute(request, {}, [&](engine::RunResult r) { out = std::move(r); });
  h.run_until([&] { return out.has_value(); });
  REQUIRE(out->service_error);
  CHECK(out->service_error->find("requires-python '>=3.99' is not satisfied") != std::string::npos);
  CHECK(out->end_reason == engine::EndReason::refused);
  CHECK(out->stdout_stream.text.empty());
}

namespace {

// The zygotes this process started (the none backend runs them as direct children).
std::vector<pid_t> own_zygotes() {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != ::getpid()) continue;
    const auto exe = std::filesystem::read_symlink(entry.path() / "exe", ec);
    if (!ec && exe.filename() == "mcp-python-exec-sandbox-zygote") found.push_back(std::stoi(name));
  }
  return found;
}

// The work dirs of a zygote's children (its spares' and runs' inits work in theirs).
std::vector<std::string> work_dirs_of_children(pid_t zygote) {
  std::vector<std::string> dirs;
  std::ifstream children("/proc/" + std::to_string(zygote) + "/task/" + std::to_string(zygote) + "/children");
  pid_t child = 0;
  while (children >> child) {
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(child) + "/cwd", ec);
    if (!ec && cwd.filename().string().rfind("mpes-run-", 0) == 0) dirs.push_back(cwd.string());
  }
  return dirs;
}

}  // namespace

TEST_CASE("engine: a zygote that dies fails its runs as service errors and is replaced", "[engine]") {
  Harness h;
  h.run("pass");
  const auto zygotes = own_zygotes();
  REQUIRE(zygotes.size() == 1);
  std::optional<engine::RunResult> out;
  h.start("import time\nprint('running', flush=True)\ntime.sleep(60)", out, 60);
  h.io.run_for(1s);
  h.io.restart();
  REQUIRE_FALSE(out);
  // The running run's work dir and its spare's: the zygote cannot remove them once killed.
  const auto dirs = work_dirs_of_children(zygotes.front());
  CHECK(dirs.size() >= 2);
  REQUIRE(::kill(zygotes.front(), SIGKILL) == 0);
  h.run_until([&] { return out.has_value(); }, 10s);
  REQUIRE(out->service_error);
  CHECK(out->service_error->find("zygote lost") != std::string::npos);
  CHECK(out->end_reason == engine::EndReason::sandbox_error);
  // The next run gets a new zygote.
  const auto r = h.run("print('again')");
  CHECK_FALSE(r.service_error);
  CHECK(r.stdout_stream.text == "again\n");
  const auto now = own_zygotes();
  REQUIRE(now.size() == 1);
  CHECK(now.front() != zygotes.front());
  // The server made them a directory of the lost zygote's own, and removed it with them.
  const auto root = std::filesystem::path(dirs.front()).parent_path();
  CHECK(root.filename().string().rfind("mpes-none-", 0) == 0);
  for (const auto& dir : dirs) CHECK(std::filesystem::path(dir).parent_path() == root);
  h.run_until([&] { return !std::filesystem::exists(root); }, 5s);
  CHECK_FALSE(std::filesystem::exists(root));
  // The new zygote's runs work in a directory of its own.
  const auto fresh = work_dirs_of_children(now.front());
  REQUIRE_FALSE(fresh.empty());
  CHECK(std::filesystem::path(fresh.front()).parent_path() != root);
}

TEST_CASE("spawn path: an interpreter without a shared libpython runs a fresh one per run",
          "[engine][spawn]") {
  if (::access("/usr/bin/python3.11", X_OK) != 0) {
    WARN("skipped: /usr/bin/python3.11 is not on this host");
    return;
  }
  asio::io_context io;
  engine::ZygoteLaunch launch;
  launch.interpreter.version = "3.11";
  launch.interpreter.major_minor = "3.11";
  launch.interpreter.executable = "/usr/bin/python3.11";
  launch.interpreter.prefix = launch.interpreter.base_prefix = "/usr";
  launch.interpreter.libpython = "";  // as for a static build
  launch.policy.backend = sandbox::Backend::none;
  launch.zygote_path = (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
                        "mcp-python-exec-sandbox-zygote").string();
  auto zygote = std::make_shared<engine::ZygoteProcess>(io, launch);
  std::optional<engine::ZygoteProcess::State> state;
  zygote->start([&](engine::ZygoteProcess::State s, const std::string&) { state = s; });
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!state && std::chrono::steady_clock::now() < until) io.run_for(20ms);
  REQUIRE(state == engine::ZygoteProcess::State::ready);

  int p_out[2], p_err[2], p_result[2];
  REQUIRE(::pipe2(p_out, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(p_err, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(p_result, O_CLOEXEC) == 0);
  const std::string script = "import sys\nprint('spawned', sys.argv)\n6 * 7\n";
  const int memfd = static_cast<int>(::syscall(SYS_memfd_create, "s", MFD_CLOEXEC));
  REQUIRE(::write(memfd, script.data(), script.size()) == static_cast<ssize_t>(script.size()));
  ::lseek(memfd, 0, SEEK_SET);
  std::optional<int> status;
  engine::ZygoteProcess::RunCallbacks callbacks;
  callbacks.started = [](pid_t, sandbox::UniqueFd) {};
  callbacks.exited = [&](const engine::zygote::ExitedMessage& m) { status = m.wait_status; };
  callbacks.failed = [&](const std::string& why) { FAIL(why); };
  REQUIRE(zygote->run(1, 30, {memfd, p_out[1], p_err[1], p_result[1]}, callbacks));
  ::close(memfd);
  ::close(p_out[1]);
  ::close(p_err[1]);
  ::close(p_result[1]);
  while (!status && std::chrono::steady_clock::now() < until) io.run_for(20ms);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(p_out[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  CHECK(out == "spawned ['script.py']\n");
  // The result channel survived the exec: the value, then the end record with the exit code.
  engine::ResultDecoder decoder(engine::ResultLimits{});
  for (ssize_t n; (n = ::read(p_result[0], buf, sizeof buf)) > 0;) {
    decoder.append(std::string_view(buf, static_cast<std::size_t>(n)));
  }
  const auto rich = decoder.finish();
  INFO(decoder.error());
  REQUIRE(rich.end);
  CHECK(rich.end->exit_code == 0);
  CHECK(rich.value_repr == "42");
  ::close(p_out[0]);
  ::close(p_err[0]);
  ::close(p_result[0]);
  bool reaped = false;
  zygote->stop([&] { reaped = true; });
  while (!reaped && std::chrono::steady_clock::now() < until + 10s) io.run_for(20ms);
  CHECK(reaped);
}
