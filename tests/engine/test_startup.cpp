// The order in which the engine gets ready (engine/startup.h), over a catalog with fake sources:
// runs are let through only once the cgroups and the quick default are both known, so that a
// run arriving meanwhile cannot start the full discovery ahead of the first zygote.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/event_loop.h"
#include "engine/interpreters/catalog.h"
#include "engine/startup.h"

namespace {

// All that the startup's order looks at: which interpreter it is.
engine::Interpreter system_python() {
  engine::Interpreter in;
  in.version = "3.11.2";
  in.executable = "/usr/bin/python3.11";
  return in;
}

// Runs the loop until `done` says so (at most ~5 s).
template <typename Done>
bool run_until(asio::io_context& io, Done done) {
  for (int i = 0; i < 5000 && !done(); ++i) {
    io.restart();
    io.poll();
    if (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace

TEST_CASE("startup: runs wait for the quick default as well as the cgroups, then the zygote warms first",
          "[startup]") {
  asio::io_context io;
  asio::thread_pool worker{1};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> discoveries{0};
  std::atomic<bool> quick_probing{false};
  engine::InterpreterCatalog catalog(
      io, worker.get_executor(),
      engine::InterpreterSources{[&, released]() -> std::optional<engine::Interpreter> {
                                   quick_probing = true;
                                   released.wait();  // a probe that takes its time
                                   return system_python();
                                 },
                                 [&] {
                                   ++discoveries;
                                   return std::vector<engine::Interpreter>{system_python()};
                                 }},
      std::nullopt);
  std::vector<std::string> warmed;
  int readies = 0;
  engine::Startup startup(io, worker.get_executor(), catalog, /*want_cgroups=*/false, /*warm_cache=*/false,
                          engine::Startup::Hooks{[&](const engine::Interpreter& in) { warmed.push_back(in.executable); },
                                                 [&] { ++readies; }, [] {}, [](const engine::Interpreter&) {},
                                                 [] { return false; }});
  startup.begin(true);

  // The cgroups' step is done (there is nothing to prepare) while the quick probe still runs.
  REQUIRE(run_until(io, [&] { return quick_probing.load(); }));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  run_until(io, [&] { return std::chrono::steady_clock::now() > until; });  // the cgroups' step has posted
  CHECK_FALSE(startup.ready());
  CHECK(readies == 0);
  CHECK(warmed.empty());

  release.set_value();
  REQUIRE(run_until(io, [&] { return startup.ready(); }));
  CHECK(readies == 1);
  CHECK(warmed == std::vector<std::string>{"/usr/bin/python3.11"});
  CHECK(discoveries == 0);  // it waits for that zygote
  worker.join();
}
