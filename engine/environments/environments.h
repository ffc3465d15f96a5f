// Dependency environments for runs, asynchronously on the server's io_context: which
// requirements the interpreter already satisfies, and a content-addressed environment (installed
// once, sandboxed) for the rest. Every callback runs on the io_context's thread; the blocking work
// (probes, installers, the store) runs on worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "engine/environment_report.h"
#include "engine/environments/store.h"
#include "engine/environments/installer.h"
#include "engine/interpreters/discovery.h"
#include "engine/packaging/script_metadata.h"
#include "sandbox/cgroup.h"

namespace engine {

struct EnvironmentsConfig {
  std::string cache_dir;                    // "" = engine::cache_dir()
  std::uint64_t max_bytes = 4096ull << 20;  // --env-cache-max-mb
  deps::InstallerOptions installer;         // uv path, index options, sandboxing, timeout
  unsigned worker_threads = 4;
  // Where each install gets a control group of its own (memory and process limits for its whole
  // tree, installer.limits); none: rlimits stand in.
  sandbox::CgroupSetup cgroups;
};

struct EnvResult {
  enum class Status {
    ready,           // run it (with env_root/site_dir when set)
    install_failed,  // the requirements cannot be installed: end_reason install_failed
    error,           // the service failed (no installer, no bwrap, cache unwritable): isError
  };
  Status status = Status::ready;
  std::string error;  // install_failed: the installer's decisive lines; error: what to do

  // nullopt when the interpreter satisfies everything and no environment is needed.
  std::optional<std::string> env_root;  // mount read-only (at the same path)
  std::optional<std::string> site_dir;  // prepend to sys.path, before the interpreter's own
  // Top-level modules of the declared distributions (from the environment and the interpreter),
  // for the zygote to pre-import.
  std::vector<std::string> import_names;
  std::vector<std::string> from_interpreter;  // "numpy 1.24.2" - used as the interpreter has them
  std::vector<std::string> installed;         // requirements installed into the environment
  bool reused = false;                        // the environment existed: no installer ran
  std::string env_key;
  // Pins the environment (not evictable) while held: keep it as long as a zygote uses it.
  std::shared_ptr<EnvLease> lease;

  bool ok() const { return status == Status::ready; }
};

class Environments {
 public:
  // stage: "resolving", "downloading", "installing"; message: human-readable detail.
  using ProgressFn = std::function<void(const std::string& stage, const std::string& message)>;
  using DoneFn = std::function<void(EnvResult)>;

  Environments(asio::io_context& io, EnvironmentsConfig config);
  ~Environments();  // kills running installers and waits for the workers
  Environments(const Environments&) = delete;
  Environments& operator=(const Environments&) = delete;

  // The environment for `requirements` (already merged; markers are evaluated here for the
  // interpreter). `done` is called exactly once, unless the call is abandoned first; `progress`
  // may be empty. Concurrent calls for the same set share one resolution and one install.
  // Returns a ticket for abandon().
  std::uint64_t ensure(const Interpreter& interpreter, std::vector<Requirement> requirements,
                       ProgressFn progress, DoneFn done);
  // The caller no longer waits (its deadline passed, it was cancelled): its callbacks are dropped
  // and, when no other call waits for the same set, the install is killed (its whole tree; the
  // half-built environment is removed). io thread only.
  void abandon(std::uint64_t ticket);

  // Cache warming: installs `packages` the interpreter lacks into a throw-away directory so that
  // the installer's cache holds them. `done` gets a one-line status; failures are not fatal.
  void warm_cache(const Interpreter& interpreter, std::vector<std::string> packages,
                  std::function<void(std::string status)> done);

  // Kills running installers (their ensure() calls fail) without stopping the service.
  void kill_installs();
  // Stops: running installers are killed, queued work fails; `done` after the workers finished.
  void shutdown(std::function<void()> done);

  // How many installer processes were started (tests: a reused environment starts none).
  std::uint64_t installer_runs() const;
  // For check_environment: cache dir, size, count, bound, installer, warm state.
  void report(std::function<void(EnvironmentsStatus)> done);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
  std::thread shutdown_thread_;  // joins the workers off the io thread
};

// Package names from a warm-up list: one per line, '#' comments and blank lines ignored.
std::vector<std::string> parse_package_list(std::string_view text);

}  // namespace engine
