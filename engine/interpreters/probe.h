// Probing a candidate interpreter: running it once (through the one process runner, several at a
// time, each with a deadline) and reading what it says about itself. Outcomes are cached for the
// life of the process, keyed by the candidate's path; discovery.h decides which paths to probe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/interpreters/interpreter.h"
#include "sandbox/process.h"

namespace engine {

// The oldest CPython minor version the server runs (3.9).
inline constexpr int kMinPythonMinor = 9;

// What probing one path gave: the interpreter, or why it is not usable.
struct ProbeOutcome {
  std::optional<Interpreter> interpreter;
  std::string error;
};

// Runs discovery's commands (probes, `uv python list`), a few at a time, stdout and stderr
// together, each with `timeout`; results in the same order. All run under the switch that
// kill_running_probes pulls.
std::vector<sandbox::ProcessResult> run_probe_commands(
    const std::vector<std::vector<std::string>>& commands, std::chrono::milliseconds timeout);

// Probes the paths not cached yet (in parallel), then answers every path from the cache.
std::vector<ProbeOutcome> probe_all(const std::vector<std::string>& paths,
                                    std::chrono::milliseconds timeout);

// Probes one interpreter (through the cache). nullopt + *error when it cannot be run, does not
// answer, is not CPython or is older than 3.9. `source` is left empty.
std::optional<Interpreter> probe_interpreter(const std::string& path, std::string* error,
                                             int timeout_ms = 10000);

// Probes the interpreter at `path` as `launcher` runs it (e.g. `docker run --rm IMAGE`: the
// interpreter of a container image), not cached. Errors as probe_interpreter.
std::optional<Interpreter> probe_interpreter_with(const std::vector<std::string>& launcher,
                                                  const std::string& path, std::string* error,
                                                  int timeout_ms = 60000);

// Forgets every cached probe (tests; an operator who installed a new interpreter).
void clear_interpreter_cache();

// SIGKILL to every interpreter probe still running (and its process group), and to any started
// after: for a process about to exit without waiting for its discovery to finish.
void kill_running_probes();

}  // namespace engine
