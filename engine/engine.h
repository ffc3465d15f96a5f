// The engine as the MCP layer sees it: asynchronous execution on the server's io_context.
// Every callback is invoked on the io_context's thread; nothing here blocks that thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include "engine/environment_report.h"
#include "engine/environments/index_options.h"
#include "engine/interpreters/discovery.h"
#include "engine/run.h"
#include "sandbox/policy.h"

namespace engine {

struct EngineConfig {
  std::optional<std::string> python_version;  // --python-version; empty = default interpreter
  sandbox::Policy policy;                      // backend, network, limits
  int max_timeout_seconds = 300;
  int default_timeout_seconds = 30;
  std::size_t max_output_bytes = 102400;
  bool warm_cache = true;                       // false with --no-warm-cache
  std::string uv_path = "uv";
  std::vector<std::string> preload_modules;     // --preload (repeatable)
  unsigned max_concurrent_runs = 0;             // 0 = 2 x cores
  std::string cache_dir;                        // empty = engine::cache_dir() (engine/cache_dir.h)
  std::uint64_t env_cache_max_mb = 4096;
  unsigned max_zygotes = 4;
  unsigned zygote_idle_seconds = 600;           // a non-default zygote idle this long stops
  unsigned max_images = 4;
  IndexOptions index;
  std::string zygote_path;                      // empty = next to the server executable
  std::string build_python_path;                // the builds' stand-in (build_python.h); empty = likewise
  std::string network_agent_path;               // sandbox/network_agent.h's program; empty = likewise
  // Sessions (engine/sessions/) and files.
  unsigned max_sessions = 8;                    // --max-sessions
  unsigned session_idle_seconds = 900;          // --session-idle-seconds
  unsigned session_snapshots = 8;               // --session-snapshots: steps kept besides step 0
  std::uint64_t max_output_file_bytes = 10ull << 20;  // --max-output-file-bytes, per call
  std::string docker_path = "docker";           // --docker-path (docker or podman)
  std::string docker_image;                     // --docker-image; empty = kDefaultDockerImage
};

// Runs executing at once under `config`: --max-concurrent-runs, else 2 x cores.
unsigned max_concurrent_runs(const EngineConfig& config);

class Engine {
 public:
  using ProgressFn = std::function<void(double progress, std::optional<double> total,
                                        const std::string& message)>;
  using DoneFn = std::function<void(RunResult)>;

  // Cancels one run; the run's DoneFn is still called once, with EndReason::cancelled.
  class RunHandle {
   public:
    virtual ~RunHandle() = default;
    virtual void cancel() = 0;
  };

  virtual ~Engine() = default;

  // Starts warming (default zygote, cache warming) in the background; returns at once.
  virtual void start_warmup() = 0;
  // Queues a run. `done` is called exactly once. `progress` may be empty.
  virtual std::shared_ptr<RunHandle> execute(RunRequest request, ProgressFn progress,
                                             DoneFn done) = 0;
  // The interpreter a call asking for `version` (nullopt or "" = the server's default) runs on,
  // once known (the full discovery is started when needed); else nullopt and `why` (what is
  // available). Calls `done` on the io thread.
  using InterpreterFn = std::function<void(std::optional<Interpreter>, const std::string& why)>;
  virtual void find_interpreter(std::optional<std::string> version, InterpreterFn done) = 0;
  // What check_environment reports, probed (not assumed). Calls `done` on the io thread.
  virtual void environment_report(std::function<void(EnvironmentReport)> done) = 0;
  // Kills every run and zygote, reaps every child; then calls `done`.
  virtual void shutdown(std::function<void()> done) = 0;

  // Sessions (engine/sessions/): state that lives between calls. Each belongs to the owner that
  // created it; another owner's call gets "unknown session". Steps are execute() calls with a
  // session_id. Callbacks run on the io thread. An engine without sessions refuses them.
  using SessionFn = std::function<void(SessionReply)>;
  // Its handle cancels the creation (`done` is then called once, with "cancelled", and a session
  // made meanwhile is closed); null when `done` was answered at once.
  virtual std::shared_ptr<RunHandle> create_session(SessionRequest request, ProgressFn progress, SessionFn done);
  // A new session continuing from `step` of `id` (default: its head), in the same sandbox.
  virtual void fork_session(std::string owner, std::string id, std::optional<std::uint64_t> step, SessionFn done);
  virtual void reset_session(std::string owner, std::string id, std::uint64_t step, SessionFn done);
  virtual void close_session(std::string owner, std::string id, SessionFn done);
  virtual void list_sessions(std::string owner, std::function<void(SessionList)> done);
  // The owner is gone for good (an HTTP protocol session ended): its sessions close, also those
  // being created. `why` is logged.
  virtual void close_sessions_of(std::string owner, std::string why);
};

std::unique_ptr<Engine> make_engine(asio::io_context& io, EngineConfig config);

}  // namespace engine
