// A fake engine for server-level tests: a run of the script "sleep" ends by itself after 300 ms
// with "slept\n"; others never end by themselves. Cancel ends a run with the output it had, as the
// engine does, so lifecycles can be driven without sandboxes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/engine.h"
#include "engine/event_loop.h"

namespace test_support {

// Atomic: tests read it while the server runs on another thread.
struct EngineLog {
  std::atomic<int> warmups{0};
  std::atomic<int> cancels{0};
  std::atomic<int> executes{0};
  std::atomic<int> shutdowns{0};
  bool warmup_before_initialize_answer = false;
};

// A run of the script "sleep" ends by itself after 300 ms with "slept\n"; others never end by
// themselves. Cancel ends a run with the output it had, as the engine does.
class FakeEngine final : public engine::Engine {
 public:
  FakeEngine(asio::io_context& io, EngineLog& log) : io_(io), log_(log) {}
  void start_warmup() override { ++log_.warmups; }
  std::shared_ptr<RunHandle> execute(engine::RunRequest request, ProgressFn, DoneFn done) override {
    ++log_.executes;
    auto handle = std::make_shared<Handle>(io_, log_, std::move(done));
    if (request.script == "sleep") {
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(300));
      timer->async_wait([timer, weak = std::weak_ptr<Handle>(handle)](const asio::error_code&) {
        auto h = weak.lock();
        if (!h || !h->done) return;
        engine::RunResult result;
        result.stdout_stream.text = "slept\n";
        result.end_reason = engine::EndReason::exit;
        auto finish = std::move(h->done);
        h->done = nullptr;
        finish(result);
      });
    }
    return handle;
  }
  void find_interpreter(std::optional<std::string>, InterpreterFn done) override {
    asio::post(io_, [done = std::move(done)] { done(std::nullopt, "no interpreters (fake engine)"); });
  }
  void environment_report(std::function<void(engine::EnvironmentReport)> done) override {
    asio::post(io_, [done = std::move(done)] {
      engine::EnvironmentReport report;
      report.sandbox_status = "fake";
      done(report);
    });
  }
  void shutdown(std::function<void()> done) override {
    ++log_.shutdowns;
    asio::post(io_, std::move(done));
  }

 private:
  struct Handle final : RunHandle {
    Handle(asio::io_context& context, EngineLog& engine_log, DoneFn on_done)
        : io(context), log(engine_log), done(std::move(on_done)) {}
    void cancel() override {
      ++log.cancels;
      if (!done) return;
      asio::post(io, [done = std::move(done)] {
        engine::RunResult result;
        result.stdout_stream.text = "partial\n";
        result.exit_code = -9;
        result.end_reason = engine::EndReason::cancelled;
        done(result);
      });
      done = nullptr;
    }
    asio::io_context& io;
    EngineLog& log;
    DoneFn done;
  };
  asio::io_context& io_;
  EngineLog& log_;
};

}  // namespace test_support
