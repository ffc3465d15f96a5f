#include "engine/interpreters/catalog.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/interpreters/probe_cache.h"

namespace engine {

namespace {

bool matches(const Interpreter& interpreter, const std::string& version) {
  return interpreter.major_minor == version || interpreter.version == version;
}

std::vector<int> version_numbers(const std::string& version) {
  std::vector<int> parts;
  int value = 0;
  for (const char c : version + ".") {
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
    } else {
      parts.push_back(value);
      value = 0;
    }
  }
  return parts;
}

}  // namespace

std::string versions_list(std::vector<Interpreter> found) {
  std::stable_sort(found.begin(), found.end(), [](const Interpreter& a, const Interpreter& b) {
    return version_numbers(a.version) > version_numbers(b.version);
  });
  std::string out;
  for (const auto& in : found) {
    if (!out.empty()) out += ", ";
    out += in.version;
  }
  return out.empty() ? "none" : out;
}

InterpreterSources host_interpreter_sources(const std::string& uv_path, const std::string& cache_dir) {
  InterpreterSources sources;
  const std::string cache_file = cache_dir.empty() ? "" : cache_dir + "/interpreters.json";
  sources.quick_default = [cache_file]() -> std::optional<Interpreter> {
    // default_interpreter() prefers Debian's own /usr/bin/python3 (not a venv) whenever it
    // exists, so when this probe succeeds it is the default a full discovery would pick.
    const char* candidate = "/usr/bin/python3";
    if (::access(candidate, X_OK) != 0) return std::nullopt;
    std::error_code ec;
    const auto real = std::filesystem::canonical(candidate, ec);
    if (ec) return std::nullopt;
    // Remembered from an earlier start while the interpreter is unchanged; else probed.
    std::optional<Interpreter> system = load_cached_interpreter(cache_file, candidate);
    if (!system) {
      std::string error;
      system = probe_interpreter(candidate, &error);
      if (system) store_cached_interpreter(cache_file, candidate, *system);
    }
    // Only an embeddable interpreter warms a zygote ahead of the discovery.
    if (!system || !system->shared() || system->prefix != system->base_prefix ||
        system->executable != real.string()) {
      return std::nullopt;
    }
    if (system->source.empty()) system->source = "/usr/bin";
    return system;
  };
  sources.discover_all = [uv_path] {
    DiscoveryOptions options;
    options.uv_path = uv_path;
    return discover_interpreters(options);
  };
  return sources;
}

InterpreterCatalog::InterpreterCatalog(asio::io_context& io, asio::any_io_executor worker,
                                       InterpreterSources sources, std::optional<std::string> configured)
    : io_(io), worker_(std::move(worker)), sources_(std::move(sources)), configured_(std::move(configured)) {
  if (configured_ && configured_->empty()) configured_.reset();
}

InterpreterCatalog::~InterpreterCatalog() { *alive_ = false; }

void InterpreterCatalog::start_quick(std::function<void()> done) {
  if (quick_known_) {
    if (done) asio::post(io_, std::move(done));
    return;
  }
  if (done) quick_waiters_.push_back(std::move(done));
  if (quick_started_) return;
  quick_started_ = true;
  auto alive = alive_;
  // The worker touches nothing of `this`: the catalog may be gone when it finishes.
  asio::post(worker_, [this, &io = io_, alive, probe = sources_.quick_default] {
    std::optional<Interpreter> found;
    if (probe) {
      try {
        found = probe();
      } catch (const std::exception& e) {
        spdlog::debug("quick interpreter probe failed: {}", e.what());
      }
    }
    asio::post(io, [this, alive, found = std::move(found)]() mutable {
      if (!*alive) return;
      quick_ = std::move(found);
      quick_known_ = true;
      auto waiters = std::move(quick_waiters_);
      quick_waiters_.clear();
      for (auto& w : waiters) w();
    });
  });
}

void InterpreterCatalog::start_discovery() {
  if (discovery_started_) return;
  discovery_started_ = true;
  auto alive = alive_;
  asio::post(worker_, [this, &io = io_, alive, discover = sources_.discover_all] {
    std::vector<Interpreter> found;
    std::string error;
    try {
      if (discover) found = discover();
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io, [this, alive, found = std::move(found), error]() mutable {
      if (!*alive) return;
      if (!error.empty()) spdlog::warn("interpreter discovery failed: {}", error);
      all_ = std::move(found);
      default_ = engine::default_interpreter(all_);
      discovery_error_ = error;
      discovered_ = true;
      auto listeners = std::move(discovery_listeners_);
      discovery_listeners_.clear();
      for (auto& l : listeners) l();
    });
  });
}

void InterpreterCatalog::on_discovered(std::function<void()> listener) {
  if (discovered_) {
    asio::post(io_, std::move(listener));
    return;
  }
  discovery_listeners_.push_back(std::move(listener));
}

InterpreterChoice InterpreterCatalog::resolve(const std::optional<std::string>& version) const {
  const std::optional<std::string>& wanted = version && !version->empty() ? version : configured_;
  InterpreterChoice choice;
  if (!discovered_) {
    // Before the full discovery only the quick default is known, for whoever it fits.
    if (quick_ && (!wanted || matches(*quick_, *wanted))) {
      choice.interpreter = quick_;
    } else {
      choice.wait = true;
    }
    return choice;
  }
  if (wanted) {
    choice.interpreter = select_interpreter(all_, *wanted);
    if (!choice.interpreter) {
      // The call's own python_version is refused; the operator's --python-version is ours.
      choice.refused = version && !version->empty();
      choice.error = "Python " + *wanted + " is not available on this host; available: " + versions_list();
    }
    return choice;
  }
  choice.interpreter = default_;
  if (!choice.interpreter) {
    choice.error = "no CPython >= 3.9 was found on this host (looked on PATH, in pyenv, /usr/bin and "
                   "/usr/local/bin" +
                   std::string(discovery_error_.empty() ? "" : "; " + discovery_error_) +
                   "): install python3 (Debian: apt install python3)";
  }
  return choice;
}

void InterpreterCatalog::select(std::optional<std::string> version, ChoiceFn done) {
  if (!quick_known_) {
    start_quick([this, version = std::move(version), done = std::move(done)]() mutable {
      select(std::move(version), std::move(done));
    });
    return;
  }
  InterpreterChoice choice = resolve(version);
  if (!choice.wait) {
    done(std::move(choice));
    return;
  }
  on_discovered([this, version = std::move(version), done = std::move(done)]() mutable {
    done(resolve(version));
  });
  start_discovery();
}

bool InterpreterCatalog::is_default(const std::string& executable) const {
  return (default_ && default_->executable == executable) || (quick_ && quick_->executable == executable);
}

std::string InterpreterCatalog::versions_list() const { return engine::versions_list(all_); }

}  // namespace engine
