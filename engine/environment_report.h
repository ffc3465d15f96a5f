// What check_environment reports about the engine, as typed data: the isolation really in
// effect (probed, not assumed), the interpreters found and which are warm, the zygotes, the
// cgroups and the dependency environments. The MCP layer formats it (text and JSON).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/interpreters/discovery.h"
#include "sandbox/landlock.h"
#include "sandbox/policy.h"
#include "sandbox/probe.h"

namespace engine {

struct InterpreterStatus {
  Interpreter interpreter;
  bool warm = false;        // its zygote is ready
  bool is_default = false;  // what a call without python_version runs on
};

struct ZygoteStatus {
  std::string key;             // the interpreter's executable, plus environment or preloads
  std::string python_version;  // once ready
  std::string state;           // "starting", "ready", "failed", "stopped"
  std::uint64_t rss_bytes = 0;
  std::size_t runs_in_flight = 0;
  std::string failure;
  std::string warnings;
  std::string network;  // with a user-mode network planned: its own, or why the host's
};

struct CgroupStatus {
  std::string mode;       // e.g. "v1 memory+pids (...)", "none"
  std::string memory;     // the mechanism that limits memory ("RLIMIT_DATA" without cgroups)
  std::string processes;  // the mechanism that limits processes
  std::string note;       // why nothing better is used
};

// The dependency environments' store and installer.
struct EnvironmentsStatus {
  std::string cache_dir;
  std::uint64_t max_bytes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t environments = 0;
  // "uv 0.x.y (/path)" or "pip (python -m pip)"; sandboxed, then "; builds from source: " and
  // what confines them (deps::build_confinement).
  std::string installer;
  std::string uv_version;         // `uv --version` of the uv installs use; "" when none runs
  bool installer_sandboxed = true;
  std::string cache_warming;      // "not started", "running", "done ...", "failed ...", "disabled ..."
};

struct EnvironmentReport {
  std::string backend;          // "native", "none (unsandboxed)", "docker"
  bool network = true;
  std::string network_isolation;  // what --network on really gives (engine::plan_run_network)
  std::string run_scoping;  // whether each run is a Landlock domain of its own (sandbox/landlock.h)
  std::string user_quotas;  // each sandbox's share of the host user's kernel quotas (sandbox/user_quotas.h)
  std::string execution_path;   // "zygote" or "spawn (static interpreter)"
  std::string sandbox_status;   // "ready", "unavailable: ...", "disabled ..."; "" = unknown
  unsigned max_concurrent_runs = 0;
  std::size_t runs_in_flight = 0;
  std::size_t runs_queued = 0;
  sandbox::Limits limits;
  std::vector<std::string> preload;
  std::optional<Interpreter> interpreter;  // the default one
  std::vector<InterpreterStatus> interpreters;
  std::string discovery_error;
  std::vector<ZygoteStatus> zygotes;
  CgroupStatus cgroups;
  std::optional<sandbox::ProbeResult> probe;
  EnvironmentsStatus environments;
};

}  // namespace engine

