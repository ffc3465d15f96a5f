// Package installers (uv or pip) for dependency environments: their command lines, a sandboxed
// run under bubblewrap (sandbox/bwrap_command.h, started by sandbox/process.h), and the few
// decisive lines of a failure. Blocking: call from a worker thread, never from the server's
// event loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/environments/container.h"
#include "engine/environments/index_options.h"
#include "engine/environments/installer_config.h"
#include "engine/interpreters/discovery.h"
#include "sandbox/bwrap_command.h"
#include "sandbox/landlock.h"
#include "sandbox/policy.h"
#include "sandbox/process.h"

namespace engine::deps {

// An install is done in at most two passes, so that no code of a package ever runs with a cache
// that outlives the install:
// - wheels_only: wheels alone (uv --no-build, pip --only-binary :all:), with the shared download
//   cache `cache_dir` writable. Installing a wheel runs none of its code (bytecode is compiled,
//   not executed), so only the installer itself writes the cache.
// - with_builds: when the first pass failed (an sdist, a direct URL to a source tree...), again
//   from an empty target with builds allowed and no shared cache at all (uv --no-cache, pip
//   --no-cache-dir: a throw-away cache in the sandbox's own /tmp, gone with it).
enum class InstallPass { wheels_only, with_builds };

// The full installer command line (before sandboxing). `requirements` are PEP 508 strings.
// `cache_dir` is used by the wheels_only pass only. `confined_builds` (with_builds pass, the
// builds' stand-in bound over the interpreter, build_python.h): pip's process is started with the
// stand-in's front-end flag, and uv is not asked to compile bytecode (its compiling processes
// would be confined like builds; bytecode_command does it after).
std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements,
                                           InstallPass pass = InstallPass::wheels_only,
                                           bool confined_builds = false);

// Compiles the bytecode of what was installed into `target` (after a uv pass with confined
// builds), as `uv --compile-bytecode` would: the interpreter's compileall, no package code run.
std::vector<std::string> bytecode_command(const Interpreter& interpreter, const std::string& target);

// The lines of an installer's output that say why it failed (pip's "ERROR: ...", the conflict
// explanation, uv's "error:" / "×" / "╰─▶" lines), bounded; the last lines when none match.
std::string decisive_lines(std::string_view output);

// Failure that is the host's or the server's, not the requirements' (no installer, no bwrap).
struct InstallerUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct InstallerOptions {
  std::string uv_path = "uv";     // --uv-path; found on PATH unless it contains '/'
  IndexOptions index;
  bool sandboxed = true;          // false only for --sandbox-backend none
  // The docker backend: the installer runs in a container of the image (not under bwrap).
  ContainerWrap container;
  std::string bwrap_path = "bwrap";
  // The user-mode network the installer reaches the index through (sandbox/user_network.h),
  // when the server is root and it is installed; else the host's network (logged).
  std::string pasta_path = "pasta";
  std::string network_agent_path;  // sandbox/network_agent.h's program, for that network
  // Builds from source (the with_builds pass) run through `build_python_path` (build_python.h)
  // standing in for the interpreter: each writes only its own directories. "" (tests): builds
  // are not confined, said in the log. Not with the docker backend or without a sandbox.
  std::string build_python_path;  // host path of mcp-python-exec-sandbox-build-python
  // --network off: the front-end (uv) fetches, but builds from source run with no network at
  // all (the stand-in takes it away). pip needs the network in the process that starts builds
  // (to fetch their requirements), so with pip such an install is refused. No effect with
  // --offline (the installer has no network then) or without a sandbox.
  bool builds_without_network = false;
  int timeout_seconds = 900;
  // The runs' limits (sandbox/policy.h), applied to the installer's whole tree as to a run's:
  // file size, core dumps off, CPU time (timeout_seconds), and memory and processes per process
  // (RLIMIT_DATA, RLIMIT_NPROC) where no cgroup counts the tree (InstallRequest::cgroup_join_fds).
  sandbox::Limits limits;
  // When the server is root the installer runs as this uid/gid (nobody).
  uid_t unprivileged_uid = 65534;
  gid_t unprivileged_gid = 65534;
};

struct InstallRequest {
  const Interpreter* interpreter = nullptr;
  std::vector<std::string> requirements;  // PEP 508 strings
  std::string target;       // existing empty directory, writable by `owner_uid`
  std::string cache_dir;    // the installer's own cache (existing, writable by `owner_uid`)
  bool interpreter_has_pip = true;
  // The install's control group (sandbox/cgroup.h, open cgroup.procs fds; the caller keeps
  // them): memory and process limits for the whole tree. Empty: rlimits stand in.
  std::vector<int> cgroup_join_fds;
  bool memory_counted = false;     // a cgroup bounds the tree's memory
  bool processes_counted = false;  // a cgroup bounds the tree's process count
};

struct InstallOutcome {
  bool ok = false;
  std::string installer;   // "uv 0.x" / "pip" - which ran
  std::string error;       // decisive lines when !ok
  sandbox::ProcessResult process;
  bool builds_confined = false;  // the with_builds pass ran, its builds in Landlock domains
};

// What builds from source get from this server, for the log and check_environment: the
// stand-in's Landlock domain where the kernel has it (sandbox::plan_build_confinement), else why
// not. Probed once.
sandbox::BuildConfinement build_confinement(const InstallerOptions& options);

// Which uid the installer will run as (so callers can chown the target and cache to it).
struct InstallerIdentity {
  uid_t uid;
  gid_t gid;
  bool dropped;  // true when the server is root and the installer runs unprivileged
};
InstallerIdentity installer_identity(const InstallerOptions& options);

// The bubblewrap sandbox an installer runs in: the system read-only (sandbox/bwrap_command.h),
// the interpreter, uv, local find-links directories and `config_paths` (the user's configuration
// and what it names, installer_config.h) read-only, and nothing writable but `target` and
// `cache` (none when "": the with_builds pass). `uv_program` is "" for pip. With a `build_python`
// stand-in (build_python.h), builds started in it have no network.
sandbox::BwrapSandbox installer_sandbox(const std::string& bwrap_program, const Interpreter& interpreter,
                                       const std::string& uv_program, const IndexOptions& index,
                                       const std::string& target, const std::string& cache,
                                       std::vector<std::string> command,
                                       const std::vector<std::string>& config_paths = {},
                                       const std::string& build_python = {});

// The resource limits the installer's process sets before exec (see InstallerOptions::limits).
std::vector<sandbox::ResourceLimit> installer_rlimits(const InstallerOptions& options,
                                                      const InstallRequest& request);

// Runs the installer: the wheels_only pass, then, when it failed on its own (not stopped, not
// timed out), the with_builds pass (InstallPass). `on_line` sees its output lines as they come. Throws
// InstallerUnavailable when neither uv nor pip can be used, or bubblewrap is missing.
InstallOutcome run_installer(const InstallerOptions& options, const InstallRequest& request,
                             const std::function<void(std::string_view line)>& on_line,
                             sandbox::KillSwitch* kill_switch);

}  // namespace engine::deps
