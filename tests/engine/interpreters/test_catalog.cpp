// The one owner of interpreter state, over fake sources: what a request resolves to before and
// after the full discovery, when it waits, and what a refusal says.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/event_loop.h"
#include "engine/interpreters/catalog.h"

namespace {

engine::Interpreter interpreter(const std::string& version, const std::string& path) {
  engine::Interpreter in;
  in.version = version;
  in.major_minor = version.substr(0, version.rfind('.'));
  in.executable = path;
  in.prefix = in.base_prefix = "/usr";
  in.libpython = "/usr/lib/libpython" + in.major_minor + ".so.1.0";
  return in;
}

struct Harness {
  asio::io_context io;
  asio::thread_pool worker{1};
  int quick_probes = 0;
  int discoveries = 0;
  std::optional<engine::Interpreter> quick = interpreter("3.11.2", "/usr/bin/python3.11");
  std::vector<engine::Interpreter> found = {interpreter("3.11.2", "/usr/bin/python3.11"),
                                            interpreter("3.9.18", "/opt/py/bin/python3.9"),
                                            interpreter("3.13.0", "/opt/py/bin/python3.13")};
  engine::InterpreterCatalog catalog;

  explicit Harness(std::optional<std::string> configured = std::nullopt)
      : catalog(io, worker.get_executor(),
                engine::InterpreterSources{[this] {
                                             ++quick_probes;
                                             return quick;
                                           },
                                           [this] {
                                             ++discoveries;
                                             return found;
                                           }},
                std::move(configured)) {}
  ~Harness() { worker.join(); }

  // Runs the loop until the catalog has nothing in flight.
  void settle() {
    for (int i = 0; i < 5000; ++i) {
      io.restart();
      io.poll();
      if (!catalog.busy()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    io.restart();
    io.poll();
  }
  engine::InterpreterChoice select(std::optional<std::string> version) {
    std::optional<engine::InterpreterChoice> out;
    catalog.select(std::move(version), [&](engine::InterpreterChoice c) { out = std::move(c); });
    settle();
    REQUIRE(out);
    return *out;
  }
};

}  // namespace

TEST_CASE("catalog: nothing is known before the quick probe; then the default is, cheaply") {
  Harness h;
  CHECK(h.catalog.resolve(std::nullopt).wait);
  h.catalog.start_quick(nullptr);
  h.settle();
  const auto choice = h.catalog.resolve(std::nullopt);
  REQUIRE(choice.interpreter);
  CHECK(choice.interpreter->version == "3.11.2");
  // The default's own version needs no discovery either; another version does.
  CHECK(h.catalog.resolve(std::string("3.11")).interpreter);
  CHECK(h.catalog.resolve(std::string("3.13")).wait);
  CHECK(h.discoveries == 0);
}

TEST_CASE("catalog: select waits for the discovery once, then answers from it") {
  Harness h;
  auto choice = h.select(std::string("3.13"));
  REQUIRE(choice.interpreter);
  CHECK(choice.interpreter->executable == "/opt/py/bin/python3.13");
  choice = h.select(std::string("3.9.18"));
  REQUIRE(choice.interpreter);
  CHECK(choice.interpreter->version == "3.9.18");
  CHECK(h.quick_probes == 1);
  CHECK(h.discoveries == 1);
  CHECK(h.catalog.is_default("/usr/bin/python3.11"));
  CHECK_FALSE(h.catalog.is_default("/opt/py/bin/python3.13"));
}

TEST_CASE("catalog: a version this host lacks is refused, listing what it has, newest first") {
  Harness h;
  const auto choice = h.select(std::string("3.1"));
  CHECK_FALSE(choice.interpreter);
  CHECK_FALSE(choice.wait);
  CHECK(choice.refused);  // the call asked for it: the caller's problem
  CHECK(choice.error == "Python 3.1 is not available on this host; available: 3.13.0, 3.11.2, 3.9.18");
}

TEST_CASE("catalog: an operator's --python-version that is missing is not the caller's fault") {
  Harness h(std::string("3.7"));
  const auto choice = h.select(std::nullopt);
  CHECK_FALSE(choice.interpreter);
  CHECK_FALSE(choice.refused);
  CHECK(choice.error.find("Python 3.7 is not available on this host") == 0);
}

TEST_CASE("catalog: --python-version selects that interpreter as the default") {
  Harness h(std::string("3.13"));
  h.catalog.start_quick(nullptr);
  h.settle();
  CHECK(h.catalog.resolve(std::nullopt).wait);  // the quick default is another version
  const auto choice = h.select(std::nullopt);
  REQUIRE(choice.interpreter);
  CHECK(choice.interpreter->version == "3.13.0");
}

TEST_CASE("catalog: no interpreter at all says what to install") {
  Harness h;
  h.quick.reset();
  h.found.clear();
  const auto choice = h.select(std::nullopt);
  CHECK_FALSE(choice.interpreter);
  CHECK_FALSE(choice.refused);
  CHECK(choice.error.find("no CPython >= 3.9 was found on this host") == 0);
  CHECK(choice.error.find("apt install python3") != std::string::npos);
  CHECK(h.catalog.versions_list() == "none");
}

TEST_CASE("catalog: a failing discovery is reported, not thrown") {
  Harness h;
  h.quick.reset();
  engine::InterpreterCatalog failing(h.io, h.worker.get_executor(),
                                     engine::InterpreterSources{nullptr, []() -> std::vector<engine::Interpreter> {
                                                                  throw std::runtime_error("PATH unreadable");
                                                                }},
                                     std::nullopt);
  std::optional<engine::InterpreterChoice> out;
  failing.select(std::nullopt, [&](engine::InterpreterChoice c) { out = std::move(c); });
  for (int i = 0; i < 5000 && !out; ++i) {
    h.io.restart();
    h.io.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(out);
  CHECK(failing.discovery_error() == "PATH unreadable");
  CHECK(out->error.find("PATH unreadable") != std::string::npos);
}
