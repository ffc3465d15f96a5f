// The engine's facade: every call goes to the core (core.h), which lives as long as any run
// still refers to it.
#include "engine/event_loop.h"  // first: see there
#include "engine/engine.h"

#include "engine/core.h"

namespace engine {
namespace {

class EngineImpl final : public Engine {
 public:
  EngineImpl(asio::io_context& io, EngineConfig config) : core_(std::make_shared<Core>(io, std::move(config))) {}

  void start_warmup() override { core_->start_warmup(); }
  std::shared_ptr<RunHandle> execute(RunRequest request, ProgressFn progress, DoneFn done) override {
    const auto id = core_->execute(std::move(request), std::move(progress), std::move(done));
    return std::make_shared<Handle>(core_, id);
  }
  void find_interpreter(std::optional<std::string> version, InterpreterFn done) override {
    core_->find_interpreter(std::move(version), std::move(done));
  }
  void environment_report(std::function<void(EnvironmentReport)> done) override {
    core_->environment_report(std::move(done));
  }
  void shutdown(std::function<void()> done) override { core_->shutdown(std::move(done)); }

 private:
  class Handle final : public RunHandle {
   public:
    Handle(std::weak_ptr<Core> core, std::uint64_t id) : core_(std::move(core)), id_(id) {}
    void cancel() override {
      if (auto core = core_.lock()) core->cancel(id_);
    }

   private:
    std::weak_ptr<Core> core_;
    std::uint64_t id_;
  };

  std::shared_ptr<Core> core_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(asio::io_context& io, EngineConfig config) {
  return std::make_unique<EngineImpl>(io, std::move(config));
}

}  // namespace engine
