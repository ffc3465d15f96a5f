// The engine's facade: every call goes to the core (core.h), which lives as long as any run
// still refers to it.
#include "engine/event_loop.h"  // first: see there
#include "engine/engine.h"

#include "engine/core.h"

#include <algorithm>
#include <thread>

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
  std::shared_ptr<RunHandle> create_session(SessionRequest request, ProgressFn progress, SessionFn done) override {
    const auto id = core_->create_session(std::move(request), std::move(progress), std::move(done));
    return id != 0 ? std::make_shared<Handle>(core_, id) : nullptr;
  }
  void fork_session(std::string owner, std::string id, std::optional<std::uint64_t> step, SessionFn done) override {
    core_->fork_session(owner, id, step, std::move(done));
  }
  void reset_session(std::string owner, std::string id, std::uint64_t step, SessionFn done) override {
    core_->reset_session(owner, id, step, std::move(done));
  }
  void close_session(std::string owner, std::string id, SessionFn done) override {
    core_->close_session(owner, id, std::move(done));
  }
  void list_sessions(std::string owner, std::function<void(SessionList)> done) override {
    core_->list_sessions(owner, std::move(done));
  }
  void close_sessions_of(std::string owner, std::string why) override { core_->close_sessions_of(owner, why); }

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

namespace {
SessionReply no_sessions() {
  SessionReply reply;
  reply.error = "this server's engine has no sessions";
  reply.refused = true;
  return reply;
}
}  // namespace

std::shared_ptr<Engine::RunHandle> Engine::create_session(SessionRequest, ProgressFn, SessionFn done) {
  done(no_sessions());
  return nullptr;
}
void Engine::fork_session(std::string, std::string, std::optional<std::uint64_t>, SessionFn done) { done(no_sessions()); }
void Engine::reset_session(std::string, std::string, std::uint64_t, SessionFn done) { done(no_sessions()); }
void Engine::close_session(std::string, std::string, SessionFn done) { done(no_sessions()); }
void Engine::list_sessions(std::string, std::function<void(SessionList)> done) { done(SessionList{}); }
void Engine::close_sessions_of(std::string, std::string) {}

unsigned max_concurrent_runs(const EngineConfig& config) {
  return config.max_concurrent_runs != 0 ? config.max_concurrent_runs
                                         : 2 * std::max(1u, std::thread::hardware_concurrency());
}

std::unique_ptr<Engine> make_engine(asio::io_context& io, EngineConfig config) {
  return std::make_unique<EngineImpl>(io, std::move(config));
}

}  // namespace engine
