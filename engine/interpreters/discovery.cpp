// CPython discovery: candidates from uv, $PATH, pyenv and the system directories, each probed
// once by running it with a small script (no shell) and cached for the life of the process.
#include "engine/interpreters/discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "engine/interpreters/probe.h"
#include "engine/packaging/pep440.h"
#include "sandbox/path_search.h"
#include "sandbox/process.h"

namespace engine {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kNewestMinorToAsk = 15;  // `uv python find 3.Y` fallback range

using sandbox::ProcessResult;

// ---------------------------------------------------------------------------------------------
// Candidates.

struct Candidate {
  std::string path;
  std::string source;
  std::string same_as;  // a file known to be what `path` runs (a pyenv shim's target), or ""
};

bool is_executable_file(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// "python3.11" -> 11; "python3" -> -1 (unversioned); anything else -> nullopt.
std::optional<int> python_name_minor(std::string_view name) {
  constexpr std::string_view kPrefix = "python3";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view rest = name.substr(kPrefix.size());
  if (rest.empty()) return -1;
  if (rest.size() < 2 || rest.size() > 4 || rest[0] != '.') return std::nullopt;
  int minor = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    minor = minor * 10 + (c - '0');
  }
  return minor;
}

// The PYENV_ROOT a pyenv shim exports, when `path` is one.
std::optional<std::string> pyenv_shim_root(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.rfind("#!", 0) != 0 || head.find("pyenv") == std::string::npos) return std::nullopt;
  constexpr std::string_view kExport = "export PYENV_ROOT=\"";
  const std::size_t start = head.find(kExport);
  if (start == std::string::npos) return std::nullopt;
  const std::size_t end = head.find('"', start + kExport.size());
  if (end == std::string::npos) return std::nullopt;
  return head.substr(start + kExport.size(), end - start - kExport.size());
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t start = text.find_first_not_of(" \t\r\n:", pos);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t\r\n:", start), text.size());
    if (text[start] == '#') {  // comment to the end of the line
      pos = std::min(text.find('\n', start), text.size());
      continue;
    }
    words.emplace_back(text.substr(start, end - start));
    pos = end;
  }
  return words;
}

std::string read_small_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(65536, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// The versions pyenv selects, by its own rules: $PYENV_VERSION, else the nearest
// .python-version from $PYENV_DIR (default: the working directory) upward, else
// $PYENV_ROOT/version, else "system".
std::vector<std::string> pyenv_selected_versions(const std::string& root) {
  if (const char* env = std::getenv("PYENV_VERSION"); env && *env) return split_words(env);
  std::error_code ec;
  const char* dir_env = std::getenv("PYENV_DIR");
  fs::path dir = dir_env && *dir_env ? fs::path(dir_env) : fs::current_path(ec);
  for (; !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / ".python-version", ec)) {
      return split_words(read_small_file(dir / ".python-version"));
    }
    if (dir == dir.root_path()) break;
  }
  if (fs::is_regular_file(fs::path(root) / "version", ec)) {
    std::vector<std::string> words = split_words(read_small_file(fs::path(root) / "version"));
    if (!words.empty()) return words;
  }
  return {"system"};
}

// What pyenv will make of a shim, worked out from the files pyenv itself reads.
struct ShimForecast {
  std::optional<std::string> unresolvable;  // why running it can only fail
  std::string target;                       // the file it will run, when certain
};

// Running a pyenv shim costs a bash and a pyenv (~0.5 s, more on a busy host). A shim whose
// program is in none of the selected versions only fails, so it is not run; shims known to
// reach the same file are run once. When unsure ("system", prefixes like "3.11", plugins) the
// shim runs and pyenv decides.
ShimForecast forecast_shim(const fs::path& shim) {
  ShimForecast forecast;
  const std::optional<std::string> root = pyenv_shim_root(shim);
  if (!root) return forecast;
  std::string names;
  for (const std::string& version : pyenv_selected_versions(*root)) {
    const fs::path dir = fs::path(*root) / "versions" / version;
    std::error_code ec;
    if (version == "system" || !fs::is_directory(dir, ec)) return forecast;
    if (is_executable_file(dir / "bin" / shim.filename())) {
      forecast.target = (dir / "bin" / shim.filename()).string();
      return forecast;
    }
    names += (names.empty() ? "" : ", ") + version;
  }
  forecast.unresolvable = "pyenv shim: " + shim.filename().string() +
                          " is not in the selected pyenv version(s) " + names;
  return forecast;
}

// pythonX.Y entries newest first, then python3.
void add_dir_candidates(const std::string& dir, const std::string& source,
                        std::vector<Candidate>& out, std::vector<SkippedInterpreter>& skipped) {
  std::error_code ec;
  std::vector<std::pair<int, std::string>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<int> minor = python_name_minor(name);
    if (!minor || !is_executable_file(it->path())) continue;
    found.emplace_back(*minor, it->path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    if ((a.first < 0) != (b.first < 0)) return b.first < 0;  // python3 last
    return a.first > b.first;
  });
  for (const auto& [minor, path] : found) {
    if (minor >= 0 && minor < kMinPythonMinor) {
      skipped.push_back({path, source, "older than 3." + std::to_string(kMinPythonMinor) + " (by name)"});
      continue;
    }
    ShimForecast shim = forecast_shim(path);
    if (shim.unresolvable) {
      skipped.push_back({path, source, *shim.unresolvable});
      continue;
    }
    out.push_back({path, source, std::move(shim.target)});
  }
}

// $PATH, or the directories the options name instead.
std::string search_path(const DiscoveryOptions& options) {
  if (options.path_dirs.empty()) return sandbox::search_path();
  std::string path;
  for (const std::string& dir : options.path_dirs) path += (path.empty() ? "" : ":") + dir;
  return path;
}

// The directories searched for pythonX.Y and python3, as the shell reads PATH
// (sandbox/path_search.h: an empty entry is the current directory).
std::vector<std::string> path_dirs(const DiscoveryOptions& options) {
  return sandbox::path_directories(search_path(options));
}

std::string pyenv_root(const DiscoveryOptions& options) {
  if (!options.pyenv_root.empty()) return options.pyenv_root;
  if (const char* root = std::getenv("PYENV_ROOT"); root && *root) return root;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.pyenv";
  return "";
}

void add_pyenv_candidates(const std::string& root, std::vector<Candidate>& out,
                          std::vector<SkippedInterpreter>& skipped) {
  if (root.empty()) return;
  std::error_code ec;
  std::vector<std::pair<std::optional<pep440::Version>, std::string>> versions;
  for (fs::directory_iterator it(root + "/versions", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    versions.emplace_back(pep440::parse_version(name), name);
  }
  // Newest first; names that are not versions (envs, other implementations) after, by name.
  std::sort(versions.begin(), versions.end(), [](const auto& a, const auto& b) {
    if (a.first.has_value() != b.first.has_value()) return a.first.has_value();
    if (a.first && *a.first != *b.first) return *a.first > *b.first;
    return a.second < b.second;
  });
  for (const auto& [version, name] : versions) {
    const fs::path python = fs::path(root) / "versions" / name / "bin" / "python3";
    if (!is_executable_file(python)) continue;
    if (version && !version->release.empty() &&
        (version->release[0] != "3" ||
         (version->release.size() > 1 && std::stoi(version->release[1]) < kMinPythonMinor))) {
      skipped.push_back({python.string(), "pyenv", "Python " + name + " is older than 3." +
                                                       std::to_string(kMinPythonMinor)});
      continue;
    }
    out.push_back({python.string(), "pyenv", ""});
  }
}

std::optional<std::string> find_uv(const DiscoveryOptions& options) {
  return sandbox::find_executable(options.uv_path, search_path(options));
}

// Absolute paths in `uv python list` / `uv python find` output ("key  /path/python -> target").
std::vector<std::string> paths_in(const std::string& output) {
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start < output.size()) {
    const std::size_t end = std::min(output.find('\n', start), output.size());
    const std::string_view line = std::string_view(output).substr(start, end - start);
    start = end + 1;
    std::size_t pos = 0;
    while (pos < line.size()) {
      while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
      const std::size_t token_end = std::min(line.find_first_of(" \t", pos), line.size());
      const std::string_view token = line.substr(pos, token_end - pos);
      if (!token.empty() && token.front() == '/') {
        paths.emplace_back(token);
        break;
      }
      pos = token_end;
    }
  }
  return paths;
}

void add_uv_candidates(const DiscoveryOptions& options, std::vector<Candidate>& out) {
  const std::optional<std::string> uv = find_uv(options);
  if (!uv) return;  // no uv: skip silently
  const auto timeout = std::chrono::milliseconds(options.probe_timeout_ms);
  std::vector<ProcessResult> runs = run_probe_commands(
      {{*uv, "python", "list", "--only-installed", "--python-preference", "only-managed"}},
      timeout);
  std::vector<std::string> found;
  if (runs[0].ok()) {
    found = paths_in(runs[0].out);
  } else {
    // Older or unusual uv: ask version by version.
    std::vector<std::vector<std::string>> finds;
    for (int minor = kNewestMinorToAsk; minor >= kMinPythonMinor; --minor) {
      finds.push_back({*uv, "python", "find", "--python-preference", "only-managed",
                       "3." + std::to_string(minor)});
    }
    for (const ProcessResult& r : run_probe_commands(finds, timeout)) {
      if (r.ok()) {
        for (std::string& p : paths_in(r.out)) found.push_back(std::move(p));
      }
    }
  }
  for (std::string& p : found) out.push_back({std::move(p), "uv", ""});
}

}  // namespace

DiscoveryReport discover_interpreters_report(const DiscoveryOptions& options) {
  DiscoveryReport report;
  std::vector<Candidate> candidates;
  add_uv_candidates(options, candidates);
  for (const std::string& dir : path_dirs(options)) {
    add_dir_candidates(dir, "path", candidates, report.skipped);
  }
  add_pyenv_candidates(pyenv_root(options), candidates, report.skipped);
  for (const std::string& dir : options.system_dirs) {
    add_dir_candidates(dir, dir, candidates, report.skipped);
  }

  // The same file reached twice (a symlink, a dir listed twice, shims of one pyenv version) is
  // probed once.
  std::vector<Candidate> unique;
  std::set<std::string> seen_files;
  for (Candidate& c : candidates) {
    std::error_code ec;
    const fs::path real = fs::canonical(c.same_as.empty() ? c.path : c.same_as, ec);
    if (seen_files.insert(ec ? c.path : real.string()).second) unique.push_back(std::move(c));
  }

  std::vector<std::string> paths;
  for (const Candidate& c : unique) paths.push_back(c.path);
  const std::vector<ProbeOutcome> outcomes =
      probe_all(paths, std::chrono::milliseconds(options.probe_timeout_ms));

  std::set<std::pair<std::string, std::string>> seen_interpreters;
  for (std::size_t i = 0; i < unique.size(); ++i) {
    const ProbeOutcome& outcome = outcomes[i];
    if (!outcome.interpreter) {
      report.skipped.push_back({unique[i].path, unique[i].source, outcome.error});
      continue;
    }
    Interpreter it = *outcome.interpreter;
    if (!seen_interpreters.emplace(it.executable, it.prefix).second) continue;
    it.source = unique[i].source;
    report.interpreters.push_back(std::move(it));
  }
  return report;
}

std::vector<Interpreter> discover_interpreters(const DiscoveryOptions& options) {
  return discover_interpreters_report(options).interpreters;
}

std::optional<Interpreter> default_interpreter(const std::vector<Interpreter>& found) {
  if (found.empty()) return std::nullopt;
  std::error_code ec;
  const fs::path system = fs::canonical("/usr/bin/python3", ec);
  if (!ec) {
    for (const Interpreter& it : found) {
      // Debian's own interpreter, not a venv made from it.
      if (it.executable == system.string() && it.prefix == it.base_prefix) return it;
    }
  }
  return found.front();
}

std::optional<Interpreter> select_interpreter(const std::vector<Interpreter>& found,
                                              const std::string& major_minor) {
  const auto matches = [&](const Interpreter& it) {
    return it.major_minor == major_minor || it.version == major_minor;
  };
  if (std::optional<Interpreter> d = default_interpreter(found); d && matches(*d)) return d;
  for (const Interpreter& it : found) {
    if (matches(it)) return it;
  }
  return std::nullopt;
}

}  // namespace engine
