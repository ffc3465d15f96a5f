// Execution engine (placeholder while the zygote lands): refuses every run with an actionable
// message, so the server links and answers honestly.
#include <utility>

#include <asio/post.hpp>

#include "engine/engine.h"

namespace engine {
namespace {

class RefusingEngine final : public Engine {
 public:
  explicit RefusingEngine(asio::io_context& io) : io_(io) {}

  void start_warmup() override {}

  std::shared_ptr<RunHandle> execute(RunRequest, ProgressFn, DoneFn done) override {
    asio::post(io_, [done = std::move(done)] {
      RunResult result;
      result.exit_code = -1;
      result.end_reason = EndReason::sandbox_error;
      result.service_error = "execution engine is not available in this build yet";
      done(std::move(result));
    });
    return std::make_shared<NoopHandle>();
  }

  void environment_report(std::function<void(nlohmann::json)> done) override {
    asio::post(io_, [done = std::move(done)] { done(nlohmann::json{{"engine", "unavailable"}}); });
  }

  void shutdown(std::function<void()> done) override { asio::post(io_, std::move(done)); }

 private:
  struct NoopHandle final : RunHandle {
    void cancel() override {}
  };
  asio::io_context& io_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(asio::io_context& io, EngineConfig /*config*/) {
  return std::make_unique<RefusingEngine>(io);
}

}  // namespace engine
