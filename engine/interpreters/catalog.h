// The interpreters of this host, owned once for the whole server. Two sources:
//   - the quick default: Debian's /usr/bin/python3 alone, probed once (and remembered across
//     starts in the cache directory), so that the default zygote can warm before anything else;
//   - the full discovery: every CPython >= 3.9 (uv, PATH, pyenv, /usr/bin, /usr/local/bin),
//     which runs each candidate and so takes up to seconds; started only when needed.
// Probing blocks, so it runs on the owner's worker executor; every answer and callback comes on
// the io_context's thread. What a request for a version resolves to is decided by resolve(), a
// function of what is known at that moment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/interpreters/discovery.h"

namespace engine {

// Where interpreters come from (replaceable in tests). Both run on a worker thread.
struct InterpreterSources {
  // The default interpreter found cheaply, or nullopt; it must be what a full discovery would
  // choose as the default (engine::default_interpreter).
  std::function<std::optional<Interpreter>()> quick_default;
  // Every interpreter (slow). May throw; the message is reported.
  std::function<std::vector<Interpreter>()> discover_all;
};

// The host's own: /usr/bin/python3 (shared libpython, not a venv) for the quick default, with
// its probe remembered in <cache_dir>/interpreters.json; the full discovery with `uv_path`.
InterpreterSources host_interpreter_sources(const std::string& uv_path, const std::string& cache_dir);

// What a request for an interpreter resolves to right now.
struct InterpreterChoice {
  std::optional<Interpreter> interpreter;
  bool wait = false;     // not known until the full discovery is done
  bool refused = false;  // the request named a version this host lacks (the caller's problem)
  std::string error;     // when neither chosen nor waiting: what is available, what to do
};

class InterpreterCatalog {
 public:
  using ChoiceFn = std::function<void(InterpreterChoice)>;

  // `configured`: the server's --python-version (empty = the default interpreter).
  InterpreterCatalog(asio::io_context& io, asio::any_io_executor worker, InterpreterSources sources,
                     std::optional<std::string> configured);
  InterpreterCatalog(const InterpreterCatalog&) = delete;
  InterpreterCatalog& operator=(const InterpreterCatalog&) = delete;
  ~InterpreterCatalog();

  // Probes the quick default (once); `done` runs on the io thread when it is known.
  void start_quick(std::function<void()> done);
  // Starts the full discovery (once); listeners added with on_discovered() run when it ends.
  void start_discovery();
  void on_discovered(std::function<void()> listener);

  bool quick_known() const { return quick_known_; }
  bool discovery_started() const { return discovery_started_; }
  bool discovered() const { return discovered_; }
  // A probe has started and its answer has not reached the io thread yet.
  bool busy() const { return (quick_started_ && !quick_known_) || (discovery_started_ && !discovered_); }

  // `version` "X.Y" or "X.Y.Z", or nullopt / "" for the server's default (--python-version, else
  // the host's default interpreter). Before the discovery ends only the quick default is known.
  InterpreterChoice resolve(const std::optional<std::string>& version) const;
  // resolve(), waiting for (and starting) the full discovery when needed.
  void select(std::optional<std::string> version, ChoiceFn done);

  const std::optional<Interpreter>& quick_default() const { return quick_; }
  const std::vector<Interpreter>& all() const { return all_; }  // after discovered()
  const std::optional<Interpreter>& default_interpreter() const { return default_; }
  const std::string& discovery_error() const { return discovery_error_; }
  // Whether `executable` is the default interpreter's (quick or discovered).
  bool is_default(const std::string& executable) const;
  // "3.13.0, 3.12.1, ..." newest first ("none" when nothing was found).
  std::string versions_list() const;

 private:
  asio::io_context& io_;
  asio::any_io_executor worker_;
  InterpreterSources sources_;
  std::optional<std::string> configured_;
  // Cleared by the destructor: a probe still running on the worker then posts nowhere.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  bool quick_started_ = false;
  bool quick_known_ = false;
  std::optional<Interpreter> quick_;
  std::vector<std::function<void()>> quick_waiters_;

  bool discovery_started_ = false;
  bool discovered_ = false;
  std::vector<Interpreter> all_;
  std::optional<Interpreter> default_;
  std::string discovery_error_;
  std::vector<std::function<void()>> discovery_listeners_;
};

// "3.13.0, 3.12.1, ...": newest first, as a user scans for the one to ask for; "none" if empty.
std::string versions_list(std::vector<Interpreter> found);

}  // namespace engine
