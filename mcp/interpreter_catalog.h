// The interpreters on this host, as the tools need them. Probing runs interpreters (blocking,
// ~30 ms each, seconds for a full discovery through pyenv shims), so it happens on background
// threads, only when a tool asks, and is cached; answers arrive on the io thread.
// The common case -- the default interpreter -- costs one probe, not a full discovery.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/interpreters/discovery.h"

namespace mcp {

struct InterpreterSnapshot {
  std::vector<engine::Interpreter> all;
  std::string error;  // discovery itself failed (the list is then empty)

  // The interpreter for "X.Y" (or "X.Y.Z"), or the default one when `version` is empty. On
  // failure nullopt and `why` says what is available.
  std::optional<engine::Interpreter> select(const std::optional<std::string>& version,
                                            std::string* why) const;
};

struct InterpreterSources {
  // The default interpreter found cheaply (one probe), or nullopt when that is not possible;
  // it must be what a full discovery would choose as default.
  std::function<std::optional<engine::Interpreter>()> quick_default;
  // Every interpreter (slow).
  std::function<std::vector<engine::Interpreter>()> discover_all;
};

class InterpreterCatalog {
 public:
  using SelectFn = std::function<void(std::optional<engine::Interpreter>, const std::string& why)>;
  using AllFn = std::function<void(const InterpreterSnapshot&)>;

  InterpreterCatalog(asio::io_context& io, InterpreterSources sources);
  // Never waits for a probe in progress: the probe finishes on its own and is dropped.
  ~InterpreterCatalog();
  InterpreterCatalog(const InterpreterCatalog&) = delete;
  InterpreterCatalog& operator=(const InterpreterCatalog&) = delete;

  void select(std::optional<std::string> version, SelectFn done);
  void all(AllFn done);
  // A probe has started and its answer has not reached the io thread yet.
  bool busy() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Probing as the engine does it (engine/interpreters/discovery.h): /usr/bin/python3 for the quick
// default, the full discovery (uv, PATH, pyenv, /usr/bin, /usr/local/bin) otherwise.
InterpreterSources host_interpreter_sources(std::string uv_path);

bool interpreter_matches(const engine::Interpreter& interpreter, const std::string& version);

// Probes still running on detached threads (they use the engine's process-wide probe cache, so
// the process must not run static destructors under them: main leaves with _Exit then).
int background_probes_running();

}  // namespace mcp
