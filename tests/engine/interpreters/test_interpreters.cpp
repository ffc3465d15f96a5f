// Interpreter discovery: the tree walk on a fake directory tree (shell scripts answering the
// probe with canned JSON), and the real interpreters of this machine.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/interpreters/discovery.h"
#include "engine/packaging/pep440.h"
#include "tests/support/scoped_env.h"

namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mpes-interp-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_executable(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  {
    std::ofstream out(path);
    out << content;
  }
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

// A fake interpreter: insists on the probe's -I flag, then prints the canned answer.
void fake_python(const fs::path& path, const std::string& version, const std::string& executable,
                 const std::string& implementation = "cpython", const std::string& libpython = "") {
  const auto parts = engine::pep440::parse_version(version)->release;
  nlohmann::json answer{
      {"implementation", implementation},
      {"version", version},
      {"version_info", {std::stoi(parts[0]), std::stoi(parts[1]), std::stoi(parts[2])}},
      {"executable", executable},
      {"prefix", fs::path(executable).parent_path().parent_path().string()},
      {"base_prefix", fs::path(executable).parent_path().parent_path().string()},
      {"libpython", libpython},
      {"site_packages", {"/fake/site-packages"}},
      {"sys_path", {"/fake/lib", "/fake/site-packages"}},
      {"markers", {{"python_version", parts[0] + "." + parts[1]}, {"python_full_version", version},
                   {"platform_release", "6.1.0"}}}};
  write_executable(path, "#!/bin/sh\n[ \"$1\" = \"-I\" ] || exit 3\necho 'noise from a sitecustomize'\n"
                         "printf '%s\\n' 'MPES-PROBE " + answer.dump() + "'\n");
}

std::vector<std::string> versions_of(const std::vector<engine::Interpreter>& found) {
  std::vector<std::string> out;
  for (const auto& it : found) out.push_back(it.version + " " + it.source);
  return out;
}

const engine::SkippedInterpreter* skipped_path(const engine::DiscoveryReport& report,
                                               const fs::path& path) {
  for (const auto& s : report.skipped) {
    if (s.path == path.string()) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("discovery walks uv, PATH, pyenv and system dirs in order", "[interpreters]") {
  engine::clear_interpreter_cache();
  TempDir tmp;
  const fs::path t = tmp.path();

  // uv lists one managed interpreter.
  fake_python(t / "uv-python/bin/python3.14", "3.14.0", (t / "uv-python/bin/python3.14").string());
  write_executable(t / "uvbin/uv",
                   "#!/bin/sh\n[ \"$1 $2\" = \"python list\" ] || exit 2\n"
                   "echo 'cpython-3.14.0-linux-x86_64-gnu    " +
                       (t / "uv-python/bin/python3.14").string() + "'\n"
                       "echo 'cpython-3.15.0-linux-x86_64-gnu    <download available>'\n");
  // PATH dir 1: python3.12, python3 symlinked to it (probed once), python3.8 (too old by name).
  fake_python(t / "path1/python3.12", "3.12.3", (t / "real/python3.12").string(), "cpython",
              "/fake/libpython3.12.so.1.0");
  fs::create_symlink(t / "path1/python3.12", t / "path1/python3");
  fake_python(t / "path1/python3.8", "3.8.18", (t / "path1/python3.8").string());
  // PATH dir 2: a broken one, a PyPy, one that hangs, one not executable.
  write_executable(t / "path2/python3.13", "#!/bin/sh\necho 'boom: no such version' >&2\nexit 1\n");
  fake_python(t / "path2/python3.11", "3.11.4", (t / "path2/python3.11").string(), "pypy");
  write_executable(t / "path2/python3.10", "#!/bin/sh\nexec sleep 30\n");
  {
    std::ofstream(t / "path2/python3.9") << "not executable";
  }
  // pyenv: 3.12.3 reports the same executable as path1's (deduplicated), 3.9.1, 3.7.0 (too old).
  fake_python(t / "pyenv/versions/3.12.3/bin/python3", "3.12.3", (t / "real/python3.12").string());
  fake_python(t / "pyenv/versions/3.9.1/bin/python3", "3.9.1",
              (t / "pyenv/versions/3.9.1/bin/python3.9").string());
  fake_python(t / "pyenv/versions/3.7.0/bin/python3", "3.7.0",
              (t / "pyenv/versions/3.7.0/bin/python3.7").string());
  // A system dir: a static 3.11.
  fake_python(t / "sys/python3.11", "3.11.4", (t / "sys/python3.11").string());

  engine::DiscoveryOptions options;
  options.uv_path = (t / "uvbin/uv").string();
  options.path_dirs = {(t / "path1").string(), (t / "path2").string()};
  options.pyenv_root = (t / "pyenv").string();
  options.system_dirs = {(t / "sys").string()};
  options.probe_timeout_ms = 1000;

  const engine::DiscoveryReport report = engine::discover_interpreters_report(options);
  CHECK(versions_of(report.interpreters) ==
        std::vector<std::string>{"3.14.0 uv", "3.12.3 path", "3.9.1 pyenv",
                                 "3.11.4 " + (t / "sys").string()});

  const engine::Interpreter& py312 = report.interpreters[1];
  CHECK(py312.major_minor == "3.12");
  CHECK(py312.executable == (t / "real/python3.12").string());
  CHECK(py312.found_as == (t / "path1/python3.12").string());
  CHECK(py312.libpython == "/fake/libpython3.12.so.1.0");
  CHECK(py312.shared());
  CHECK(py312.site_packages == std::vector<std::string>{"/fake/site-packages"});
  CHECK(py312.sys_path == std::vector<std::string>{"/fake/lib", "/fake/site-packages"});
  CHECK(py312.markers.python_version == "3.12");
  CHECK(py312.markers.python_full_version == "3.12.3");
  CHECK(py312.markers.platform_release == "6.1.0");
  CHECK_FALSE(report.interpreters[3].shared());

  // Why each unusable candidate was left out.
  const auto* old_by_name = skipped_path(report, t / "path1/python3.8");
  REQUIRE(old_by_name);
  CHECK_THAT(old_by_name->reason, Catch::Contains("older than 3.9"));
  const auto* broken = skipped_path(report, t / "path2/python3.13");
  REQUIRE(broken);
  CHECK_THAT(broken->reason, Catch::Contains("status 1"));
  CHECK_THAT(broken->reason, Catch::Contains("boom: no such version"));
  const auto* pypy = skipped_path(report, t / "path2/python3.11");
  REQUIRE(pypy);
  CHECK_THAT(pypy->reason, Catch::Contains("not CPython"));
  const auto* hung = skipped_path(report, t / "path2/python3.10");
  REQUIRE(hung);
  CHECK_THAT(hung->reason, Catch::Contains("did not answer"));
  const auto* old_pyenv = skipped_path(report, t / "pyenv/versions/3.7.0/bin/python3");
  REQUIRE(old_pyenv);
  CHECK(old_pyenv->source == "pyenv");
  CHECK(skipped_path(report, t / "path2/python3.9") == nullptr);  // not executable: not a candidate
  CHECK(skipped_path(report, t / "path1/python3") == nullptr);    // same file as python3.12

  SECTION("selection by X.Y and X.Y.Z") {
    const auto& found = report.interpreters;
    REQUIRE(engine::select_interpreter(found, "3.12"));
    CHECK(engine::select_interpreter(found, "3.12")->version == "3.12.3");
    CHECK(engine::select_interpreter(found, "3.9.1")->source == "pyenv");
    CHECK_FALSE(engine::select_interpreter(found, "3.10"));
    CHECK_FALSE(engine::select_interpreter(found, "3.8"));
    // No Debian /usr/bin/python3 among these: the first found is the default.
    CHECK(engine::default_interpreter(found)->version == "3.14.0");
    CHECK_FALSE(engine::default_interpreter({}));
  }

  SECTION("probe results are cached until the cache is cleared") {
    fake_python(t / "pyenv/versions/3.9.1/bin/python3", "3.9.2",
                (t / "pyenv/versions/3.9.1/bin/python3.9").string());
    const auto again = engine::discover_interpreters(options);
    REQUIRE(again.size() == 4);
    CHECK(again[2].version == "3.9.1");
    engine::clear_interpreter_cache();
    options.probe_timeout_ms = 300;  // the hanging one again
    const auto fresh = engine::discover_interpreters(options);
    REQUIRE(fresh.size() == 4);
    CHECK(fresh[2].version == "3.9.2");
  }
}

using test_support::ScopedEnv;

TEST_CASE("pyenv shims on PATH are run only when pyenv can resolve them", "[interpreters]") {
  engine::clear_interpreter_cache();
  TempDir tmp;
  const fs::path root = tmp.path() / "pyenv";
  fake_python(root / "versions/3.12.3/bin/python3.12", "3.12.3",
              (root / "versions/3.12.3/bin/python3.12").string());
  fake_python(root / "versions/3.9.1/bin/python3.9", "3.9.1",
              (root / "versions/3.9.1/bin/python3.9").string());
  // Shims in pyenv's shape; a run leaves a trace file, so a skipped shim provably did not run.
  fs::create_symlink("python3.12", root / "versions/3.12.3/bin/python3");
  for (const char* program : {"python3.12", "python3.9", "python3"}) {
    const std::string script = R"SH(#!/usr/bin/env bash
set -e
program="${0##*/}"
export PYENV_ROOT="@ROOT@"
touch "@TRACE@$program"
# stands in for: exec pyenv exec "$program" "$@"
exec "$PYENV_ROOT/versions/3.12.3/bin/$program" "$@"
)SH";
    std::string text = script;
    text.replace(text.find("@ROOT@"), 6, root.string());
    text.replace(text.find("@TRACE@"), 7, (tmp.path() / "ran-").string());
    write_executable(root / "shims" / program, text);
  }
  ScopedEnv dir("PYENV_DIR", tmp.path().c_str());  // no .python-version up from here

  engine::DiscoveryOptions options;
  options.uv_path = "";
  options.path_dirs = {(root / "shims").string()};
  options.pyenv_root = (tmp.path() / "no-pyenv-scan").string();
  options.system_dirs = {};

  SECTION("selected by PYENV_VERSION") {
    ScopedEnv version("PYENV_VERSION", "3.12.3");
    const auto report = engine::discover_interpreters_report(options);
    REQUIRE(report.interpreters.size() == 1);
    CHECK(report.interpreters[0].version == "3.12.3");
    CHECK(report.interpreters[0].source == "path");
    CHECK(report.interpreters[0].found_as == (root / "shims/python3.12").string());
    CHECK(fs::exists(tmp.path() / "ran-python3.12"));
    CHECK_FALSE(fs::exists(tmp.path() / "ran-python3.9"));
    // python3 would reach the same file as python3.12: run once.
    CHECK_FALSE(fs::exists(tmp.path() / "ran-python3"));
    const auto* skipped = skipped_path(report, root / "shims/python3.9");
    REQUIRE(skipped);
    CHECK_THAT(skipped->reason, Catch::Contains("not in the selected pyenv version(s) 3.12.3"));
  }
  SECTION("selected by $PYENV_ROOT/version") {
    ScopedEnv version("PYENV_VERSION", nullptr);
    {
      std::ofstream(root / "version") << "# global\n3.9.1\n";
    }
    const auto report = engine::discover_interpreters_report(options);
    CHECK(fs::exists(tmp.path() / "ran-python3.9"));
    CHECK_FALSE(fs::exists(tmp.path() / "ran-python3.12"));
    REQUIRE(skipped_path(report, root / "shims/python3.12"));
  }
  SECTION("\"system\" or an unknown name: the shim runs and pyenv decides") {
    ScopedEnv version("PYENV_VERSION", "system");
    engine::discover_interpreters_report(options);
    CHECK(fs::exists(tmp.path() / "ran-python3.9"));
    CHECK(fs::exists(tmp.path() / "ran-python3.12"));
  }
}

TEST_CASE("discovery without uv, pyenv or system dirs skips them silently", "[interpreters]") {
  engine::clear_interpreter_cache();
  TempDir tmp;
  fake_python(tmp.path() / "bin/python3", "3.10.2", (tmp.path() / "bin/python3").string());
  engine::DiscoveryOptions options;
  options.uv_path = (tmp.path() / "no-such-uv").string();
  options.path_dirs = {(tmp.path() / "bin").string(), (tmp.path() / "missing").string()};
  options.pyenv_root = (tmp.path() / "no-pyenv").string();
  options.system_dirs = {};
  const auto report = engine::discover_interpreters_report(options);
  REQUIRE(report.interpreters.size() == 1);
  CHECK(report.interpreters[0].version == "3.10.2");
  CHECK(report.skipped.empty());

  std::string error;
  CHECK_FALSE(engine::probe_interpreter((tmp.path() / "no-such-python").string(), &error));
  CHECK_THAT(error, Catch::Contains("no-such-python"));
  CHECK_THAT(error, Catch::Contains("cannot run"));
}

TEST_CASE("a uv without `python list` is asked version by version", "[interpreters]") {
  engine::clear_interpreter_cache();
  TempDir tmp;
  const fs::path managed = tmp.path() / "uv-python/bin/python3.13";
  fake_python(managed, "3.13.1", managed.string());
  // `python list` fails; `python find ... 3.13` answers, other versions are not installed.
  write_executable(tmp.path() / "uv",
                   "#!/bin/sh\n[ \"$2\" = \"find\" ] || exit 2\n"
                   "for last; do :; done\n"
                   "[ \"$last\" = \"3.13\" ] || exit 1\necho '" + managed.string() + "'\n");
  engine::DiscoveryOptions options;
  options.uv_path = (tmp.path() / "uv").string();
  options.path_dirs = {(tmp.path() / "empty").string()};
  options.pyenv_root = (tmp.path() / "no-pyenv").string();
  options.system_dirs = {};
  const auto found = engine::discover_interpreters(options);
  REQUIRE(found.size() == 1);
  CHECK(found[0].version == "3.13.1");
  CHECK(found[0].source == "uv");
}

TEST_CASE("discovery finds this machine's real interpreters", "[interpreters][real]") {
  engine::clear_interpreter_cache();
  const engine::DiscoveryReport report = engine::discover_interpreters_report({});
  REQUIRE_FALSE(report.interpreters.empty());
  for (const auto& it : report.interpreters) {
    WARN("found Python " << it.version << " at " << it.executable << " (" << it.source << ", via "
                         << it.found_as << "), "
                         << (it.shared() ? "libpython " + it.libpython : std::string("static")));
    CHECK(fs::exists(it.executable));
    CHECK(it.version.rfind(it.major_minor + ".", 0) == 0);
    CHECK(engine::pep440::parse_version(it.version) >= engine::pep440::parse_version("3.9"));
    CHECK(it.markers.python_full_version == it.version);
    CHECK(it.markers.python_version == it.major_minor);
    CHECK_FALSE(it.sys_path.empty());
    CHECK(std::find(it.sys_path.begin(), it.sys_path.end(), "") == it.sys_path.end());
    if (it.shared()) {
      CHECK(fs::exists(it.libpython));
      CHECK_THAT(it.libpython, Catch::Contains("libpython" + it.major_minor));
    }
  }
  for (const auto& s : report.skipped) {
    WARN("skipped " << s.path << " (" << s.source << "): " << s.reason);
  }

  // Debian's interpreter, with its shared libpython and dist-packages.
  if (fs::exists("/usr/bin/python3")) {
    const std::string system = fs::canonical("/usr/bin/python3").string();
    const auto debian = std::find_if(report.interpreters.begin(), report.interpreters.end(),
                                     [&](const auto& it) { return it.executable == system; });
    REQUIRE(debian != report.interpreters.end());
    CHECK(debian->prefix == "/usr");
    CHECK(debian->shared());
    CHECK(fs::path(debian->libpython).filename() ==
          "libpython" + debian->major_minor + ".so.1.0");
    CHECK(fs::exists(debian->libpython));
    CHECK(std::find(debian->site_packages.begin(), debian->site_packages.end(),
                    "/usr/lib/python3/dist-packages") != debian->site_packages.end());
    const auto chosen = engine::default_interpreter(report.interpreters);
    REQUIRE(chosen);
    CHECK(chosen->executable == system);
    CHECK(engine::select_interpreter(report.interpreters, debian->major_minor)->executable == system);
  }

  // Every pyenv CPython >= 3.9 installed here is found (and probed with its own libpython).
  const char* home = std::getenv("HOME");
  const char* root_env = std::getenv("PYENV_ROOT");
  const fs::path pyenv = root_env && *root_env ? fs::path(root_env)
                                               : fs::path(home ? home : "/nonexistent") / ".pyenv";
  std::error_code ec;
  for (fs::directory_iterator dir(pyenv / "versions", ec), end; !ec && dir != end; dir.increment(ec)) {
    const auto version = engine::pep440::parse_version(dir->path().filename().string());
    if (!version || version->release.size() < 2 || version->release[0] != "3" ||
        std::stoi(version->release[1]) < 9 || !fs::exists(dir->path() / "bin/python3")) {
      continue;
    }
    INFO("pyenv " << dir->path());
    const auto match = std::find_if(report.interpreters.begin(), report.interpreters.end(),
                                    [&](const auto& it) { return it.prefix == dir->path().string(); });
    CHECK(match != report.interpreters.end());
  }
}
