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

#include "engine/environments/index_options.h"
#include "engine/interpreters/discovery.h"
#include "sandbox/bwrap_command.h"
#include "sandbox/process.h"

namespace engine::deps {

enum class InstallerKind { uv, pip };

// The full installer command line (before sandboxing). `requirements` are PEP 508 strings.
std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements);

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
  std::string bwrap_path = "bwrap";
  int timeout_seconds = 900;
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
};

struct InstallOutcome {
  bool ok = false;
  std::string installer;   // "uv 0.x" / "pip" - which ran
  std::string error;       // decisive lines when !ok
  sandbox::ProcessResult process;
};

// Which uid the installer will run as (so callers can chown the target and cache to it).
struct InstallerIdentity {
  uid_t uid;
  gid_t gid;
  bool dropped;  // true when the server is root and the installer runs unprivileged
};
InstallerIdentity installer_identity(const InstallerOptions& options);

// The bubblewrap sandbox an installer runs in: the system read-only (sandbox/bwrap_command.h),
// the interpreter, uv and local find-links directories read-only, and nothing writable but
// `target` and `cache`. `uv_program` is "" for pip.
sandbox::BwrapSandbox installer_sandbox(const std::string& bwrap_program, const Interpreter& interpreter,
                                       const std::string& uv_program, const IndexOptions& index,
                                       const std::string& target, const std::string& cache,
                                       std::vector<std::string> command);

// Runs the installer once. `on_line` sees its output lines as they come. Throws
// InstallerUnavailable when neither uv nor pip can be used, or bubblewrap is missing.
InstallOutcome run_installer(const InstallerOptions& options, const InstallRequest& request,
                             const std::function<void(std::string_view line)>& on_line,
                             sandbox::KillSwitch* kill_switch);

}  // namespace engine::deps
