// Installers and dependency environments, offline: wheels built into a temporary directory and
// installed with --find-links DIR --offline by Debian's /usr/bin/python3 -m pip (uv where it
// exists), sandboxed with bubblewrap.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "engine/environments/build_python.h"
#include "engine/environments/environments.h"
#include "engine/environments/installer.h"
#include "engine/environments/requirement_check.h"
#include "engine/packaging/script_metadata.h"
#include "sandbox/path_search.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using engine::EnvResult;
using engine::Environments;
using engine::deps::InstallerKind;

namespace {

constexpr const char* kDebianPython = "/usr/bin/python3";

const engine::Interpreter& debian_python() {
  static const engine::Interpreter interp = fixtures::probe_interpreter(kDebianPython);
  return interp;
}

// One set of packages for the whole test run.
const std::string& wheels() {
  static fixtures::TempDir dir;
  static const bool written = [] {
    fixtures::write_standard_packages(dir.path());
    return true;
  }();
  (void)written;
  return dir.path();
}

engine::IndexOptions offline_index() {
  engine::IndexOptions index;
  index.offline = true;
  index.find_links = {wheels()};
  return index;
}

engine::Requirement req(const std::string& text) {
  std::string error;
  auto r = engine::parse_requirement(text, &error);
  INFO(error);
  REQUIRE(r.has_value());
  return *r;
}

std::vector<engine::Requirement> reqs(const std::vector<std::string>& texts) {
  std::vector<engine::Requirement> out;
  for (const auto& t : texts) out.push_back(req(t));
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

engine::EnvironmentsConfig offline_config(const std::string& cache) {
  engine::EnvironmentsConfig config;
  config.cache_dir = cache;
  config.installer.index = offline_index();
  config.installer.uv_path = "/nonexistent/uv";  // pip, also where uv exists
  return config;
}

// Runs ensure() to completion on a private io_context.
EnvResult ensure_sync(asio::io_context& io, Environments& envs, const engine::Interpreter& interp,
                      std::vector<engine::Requirement> requirements,
                      Environments::ProgressFn progress = {}) {
  std::optional<EnvResult> out;
  auto guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      io.get_executor());
  envs.ensure(interp, std::move(requirements), std::move(progress), [&](EnvResult r) {
    out = std::move(r);
    guard.reset();
  });
  io.restart();
  io.run();
  REQUIRE(out.has_value());
  return std::move(*out);
}

std::string leaf_version(const EnvResult& env) {
  REQUIRE(env.site_dir.has_value());
  auto out = fixtures::run_python(kDebianPython, {*env.site_dir}, "import mpes_leaf; print(mpes_leaf.VERSION)");
  return out.substr(0, out.find('\n'));
}

}  // namespace

// ---- command lines and failure text

TEST_CASE("installer command lines pass the index options through", "[installer]") {
  engine::Interpreter py;
  py.executable = "/usr/bin/python3.11";
  engine::IndexOptions index;
  index.index_url = "https://pypi.example/simple";
  index.extra_index_urls = {"https://extra.example/simple"};
  index.find_links = {"/srv/a", "https://links.example/"};
  auto pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/env/site", "/cache/pip", index,
                                             {"numpy>=1", "pandas"});
  std::vector<std::string> pip_expected = {
      "/usr/bin/python3.11", "-I", "-m", "pip", "install", "--target", "/env/site", "--no-input",
      "--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off",
      "--cache-dir", "/cache/pip", "--only-binary", ":all:", "--index-url", "https://pypi.example/simple",
      "--extra-index-url", "https://extra.example/simple", "--find-links", "/srv/a",
      "--find-links", "https://links.example/", "--", "numpy>=1", "pandas"};
  CHECK(pip == pip_expected);

  auto uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/env/site", "/cache/uv", index,
                                            {"numpy>=1"});
  CHECK(uv[0] == "/opt/uv");
  CHECK(std::vector<std::string>(uv.begin() + 1, uv.begin() + 7) ==
        std::vector<std::string>{"pip", "install", "--target", "/env/site", "--python", "/usr/bin/python3.11"});
  CHECK(contains(uv, "--index-url"));
  CHECK(contains(uv, "--extra-index-url"));
  CHECK(contains(uv, "copy"));  // --link-mode copy: no hard links into the writable cache
  CHECK(uv.back() == "numpy>=1");

  index.offline = true;
  pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/t", "/c", index, {"x"});
  CHECK(contains(pip, "--no-index"));
  CHECK_FALSE(contains(pip, "--index-url"));
  CHECK(contains(pip, "--find-links"));
  uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/t", "/c", index, {"x"});
  CHECK(contains(uv, "--offline"));
}

TEST_CASE("only the wheels-only pass has the shared cache; builds get none", "[installer]") {
  engine::Interpreter py;
  py.executable = "/usr/bin/python3.11";
  const engine::IndexOptions index;
  using engine::deps::InstallPass;
  auto uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/t", "/c/uv", index, {"x"},
                                            InstallPass::wheels_only);
  CHECK(contains(uv, "--no-build"));
  CHECK(contains(uv, "/c/uv"));
  CHECK_FALSE(contains(uv, "--no-cache"));
  uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/t", "/c/uv", index, {"x"},
                                       InstallPass::with_builds);
  CHECK(contains(uv, "--no-cache"));
  CHECK_FALSE(contains(uv, "--no-build"));
  CHECK_FALSE(contains(uv, "--cache-dir"));
  CHECK_FALSE(contains(uv, "/c/uv"));
  auto pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/t", "/c/pip", index, {"x"},
                                             InstallPass::wheels_only);
  CHECK(contains(pip, "--only-binary"));
  CHECK(contains(pip, "/c/pip"));
  pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/t", "/c/pip", index, {"x"},
                                        InstallPass::with_builds);
  CHECK(contains(pip, "--no-cache-dir"));
  CHECK_FALSE(contains(pip, "--only-binary"));
  CHECK_FALSE(contains(pip, "/c/pip"));
}

TEST_CASE("with confined builds, pip starts as the stand-in's front-end and uv compiles no bytecode",
          "[installer]") {
  engine::Interpreter py;
  py.executable = "/usr/bin/python3.11";
  const engine::IndexOptions index;
  using engine::deps::InstallPass;
  auto pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/t", "/c", index, {"x"},
                                             InstallPass::with_builds, true);
  CHECK(std::vector<std::string>(pip.begin(), pip.begin() + 5) ==
        std::vector<std::string>{"/usr/bin/python3.11", engine::deps::kFrontEndFlag, "-I", "-m", "pip"});
  auto uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/t", "/c", index, {"x"},
                                            InstallPass::with_builds, true);
  CHECK_FALSE(contains(uv, "--compile-bytecode"));
  CHECK(contains(uv, "copy"));
  // Unconfined, and in the wheels-only pass whatever is asked: as before.
  for (const bool confined : {false, true}) {
    pip = engine::deps::installer_command(InstallerKind::pip, "", py, "/t", "/c", index, {"x"},
                                          confined ? InstallPass::wheels_only : InstallPass::with_builds, confined);
    CHECK_FALSE(contains(pip, engine::deps::kFrontEndFlag));
    uv = engine::deps::installer_command(InstallerKind::uv, "/opt/uv", py, "/t", "/c", index, {"x"},
                                         confined ? InstallPass::wheels_only : InstallPass::with_builds, confined);
    CHECK(contains(uv, "--compile-bytecode"));
  }
  CHECK(engine::deps::bytecode_command(py, "/t") ==
        std::vector<std::string>{"/usr/bin/python3.11", "-I", "-m", "compileall", "-q", "-j", "0", "/t"});
}

TEST_CASE("decisive_lines keeps what says why, not the whole log", "[installer]") {
  // uv's resolver failure, as uv prints it.
  const std::string uv_output =
      "Using Python 3.11.2 environment at: /usr\n"
      "  \u00d7 No solution found when resolving dependencies:\n"
      "  \u2570\u2500\u25b6 Because nosuchpkg was not found in the package registry and you require\n"
      "      nosuchpkg, we can conclude that your requirements are unsatisfiable.\n";
  auto uv = engine::deps::decisive_lines(uv_output);
  CHECK(uv.find("No solution found") != std::string::npos);
  CHECK(uv.find("nosuchpkg was not found") != std::string::npos);
  CHECK(uv.find("are unsatisfiable") != std::string::npos);
  CHECK(uv.find("Using Python") == std::string::npos);

  const std::string pip_output =
      "Looking in links: /w\nProcessing /w/a-1.0-py3-none-any.whl\n"
      "INFO: pip is looking at multiple versions of a to determine which version is compatible.\n"
      "ERROR: Cannot install a==1.0 and b==1.0 because these package versions have conflicting dependencies.\n"
      "\nThe conflict is caused by:\n    a 1.0 depends on c>=2\n    b 1.0 depends on c<2\n\n"
      "To fix this you could try to:\n1. loosen the range of package versions you've specified\n\n"
      "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/\n";
  auto pip = engine::deps::decisive_lines(pip_output);
  CHECK(pip.find("conflicting dependencies") != std::string::npos);
  CHECK(pip.find("a 1.0 depends on c>=2") != std::string::npos);
  CHECK(pip.find("b 1.0 depends on c<2") != std::string::npos);
  CHECK(pip.find("Looking in links") == std::string::npos);
  CHECK(pip.find("loosen") == std::string::npos);

  // Unrecognised output: its last lines.
  CHECK(engine::deps::decisive_lines("noise\nsomething broke\n") == "noise\nsomething broke");

  // A build backend failing under uv: its exception, from the [stderr] uv quotes, is kept.
  const std::string uv_build =
      "error: Failed to build `a==1.0`\n  Caused by: The build backend returned an error\n"
      "  Caused by: Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)\n\n"
      "[stderr]\nTraceback (most recent call last):\n  File \"<string>\", line 14, in <module>\n"
      "ModuleNotFoundError: No module named 'numpy'\n\n"
      "hint: This usually indicates a problem with the package or the build environment.\n";
  auto built = engine::deps::decisive_lines(uv_build);
  CHECK(built.find("Failed to build `a==1.0`") != std::string::npos);
  CHECK(built.find("ModuleNotFoundError: No module named 'numpy'") != std::string::npos);
  CHECK(built.find("Traceback") == std::string::npos);
}

TEST_CASE("decisive_lines keeps the cause of pip's internal error (e.g. a full disk)", "[installer]") {
  // pip on a full --cache-dir (e2e_tests/faults.test.mjs): "ERROR: Exception:" alone said nothing.
  const std::string pip_output =
      "Looking in links: /w\nProcessing /w/mpes_leaf-1.0-py3-none-any.whl\n"
      "Installing collected packages: mpes-leaf\n"
      "ERROR: Exception:\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/pip/_internal/cli/base_command.py\", line 160, in exc_logging_wrapper\n"
      "    status = run_func(*args)\n"
      "OSError: [Errno 28] No space left on device: '/c/envs/.tmp-1/mpes_leaf'\n";
  const auto pip = engine::deps::decisive_lines(pip_output);
  CHECK(pip == "ERROR: Exception:\nOSError: [Errno 28] No space left on device: '/c/envs/.tmp-1/mpes_leaf'");
  // Without pip's marker, a traceback line is not singled out.
  CHECK(engine::deps::decisive_lines("ERROR: x failed\nValueError: y\n") == "ERROR: x failed");
}

// ---- the interpreter's own packages

TEST_CASE("Debian's python3-numpy satisfies numpy for /usr/bin/python3", "[installer][requirements]") {
  auto check = engine::check_requirements(
      debian_python(), reqs({"numpy", "numpy>=1.0", "numpy>=999", "mpes-not-installed", "pandas"}));
  REQUIRE(check.statuses.size() == 5);
  CHECK(check.interpreter_has_pip);
  CHECK(check.exact);
  CHECK(check.statuses[0].satisfied);
  CHECK_FALSE(check.statuses[0].installed_version.empty());
  CHECK(contains(check.statuses[0].import_names, "numpy"));
  CHECK(check.statuses[1].satisfied);
  CHECK_FALSE(check.statuses[2].satisfied);
  CHECK(check.statuses[2].reason.find(">=999") != std::string::npos);
  CHECK_FALSE(check.statuses[3].satisfied);
  CHECK(check.statuses[3].reason.find("not installed") != std::string::npos);
  // pandas is satisfied only because its own dependencies (numpy, dateutil, pytz) are there too.
  CHECK(check.statuses[4].satisfied);
  CHECK(contains(check.statuses[4].import_names, "pandas"));
}

TEST_CASE("a distribution with metadata alone has the module named after it as import name",
          "[installer][requirements]") {
  // Debian's python3-sympy ships a single-file .egg-info: no top_level.txt, no file list.
  auto check = engine::check_requirements(debian_python(), reqs({"sympy", "scikit-learn", "beautifulsoup4"}));
  REQUIRE(check.statuses.size() == 3);
  for (const auto& status : check.statuses) REQUIRE(status.satisfied);
  CHECK(check.statuses[0].import_names == std::vector<std::string>{"sympy"});
  CHECK(check.statuses[1].import_names == std::vector<std::string>{"sklearn"});
  CHECK(contains(check.statuses[2].import_names, "bs4"));
}

// ---- the installer itself

TEST_CASE("pip installs a dependency chain offline, sandboxed, into the target only", "[installer]") {
  fixtures::TempDir dir;
  const std::string target = dir.path() + "/site";
  const std::string cache = dir.path() + "/cache";
  fs::create_directories(target);
  fs::create_directories(cache);
  engine::deps::InstallerOptions options;
  options.uv_path = "/nonexistent/uv";
  options.index = offline_index();
  auto who = engine::deps::installer_identity(options);
  REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
  engine::deps::InstallRequest request;
  request.interpreter = &debian_python();
  request.requirements = {"mpes_chain"};
  request.target = target;
  request.cache_dir = cache;
  std::vector<std::string> lines;
  auto outcome = engine::deps::run_installer(options, request,
                                             [&](std::string_view l) { lines.emplace_back(l); }, nullptr);
  INFO(outcome.process.err);
  REQUIRE(outcome.ok);
  CHECK(outcome.installer == "pip");
  CHECK(fs::exists(target + "/mpes_chain/__init__.py"));
  CHECK(fs::exists(target + "/mpes_leaf/__init__.py"));  // the dependency came along
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const std::string& l) { return l.rfind("Successfully installed", 0) == 0; }));
  if (who.dropped) {
    struct stat st{};
    REQUIRE(::stat((target + "/mpes_chain/__init__.py").c_str(), &st) == 0);
    CHECK(st.st_uid == who.uid);  // the installer never ran as root
  }
  // The newest leaf satisfies >=1.0.
  auto out = fixtures::run_python(kDebianPython, {target}, "import mpes_chain; print(mpes_chain.LEAF)");
  CHECK(out == "2.0\n");
}

TEST_CASE("a package build runs sandboxed: it cannot write to the host", "[installer]") {
  fixtures::TempDir dir;
  fixtures::TempDir links;
  const std::string host_marker = dir.path() + "/escaped";
  const std::string links_marker = links.path() + "/escaped";
  fixtures::write_sdist(links.path(), "mpes_evil", "1.0",
                        "import os\n"
                        "for p in [" + nlohmann::json(host_marker).dump() + ", " +
                            nlohmann::json(links_marker).dump() + "]:\n"
                        "    try:\n"
                        "        os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                        "        open(p, 'w').write('escaped')\n"
                        "    except OSError:\n"
                        "        pass\n"
                        "raise SystemExit('mpes_evil refuses to build')\n");
  const std::string target = dir.path() + "/site";
  fs::create_directories(target);
  engine::deps::InstallerOptions options;
  options.uv_path = "/nonexistent/uv";
  options.index.offline = true;
  options.index.find_links = {links.path()};
  auto who = engine::deps::installer_identity(options);
  REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
  engine::deps::InstallRequest request;
  request.interpreter = &debian_python();
  request.requirements = {"mpes_evil"};
  request.target = target;
  request.cache_dir = dir.path() + "/cache";
  auto outcome = engine::deps::run_installer(options, request, {}, nullptr);
  CHECK_FALSE(outcome.ok);
  CHECK_FALSE(fs::exists(host_marker));
  CHECK_FALSE(fs::exists(links_marker));
}

namespace {

// The builds' stand-in, built beside the unit tests.
std::string stand_in_path() {
  return (fs::read_symlink("/proc/self/exe").parent_path() / "mcp-python-exec-sandbox-build-python").string();
}

// A build backend (after `prelude`, which sets TARGET) that tries to write outside its own
// directories, then builds a wheel of module mpes_walled whose RESULT says what it achieved.
std::string walled_backend(const std::string& target) {
  return "TARGET = " + nlohmann::json(target).dump() + "\n" + R"PY(
import base64, hashlib, os, zipfile
def _attempts():
    out = []
    def attempt(name, path):
        try:
            with open(path, "w") as f:
                f.write("import sys\n")
            out.append(name + "=written")
        except OSError as e:
            out.append(name + "=" + (e.strerror or type(e).__name__).replace(" ", "_"))
    attempt("target", os.path.join(TARGET, "mpes_planted.pth"))
    attempt("tmp", "/tmp/mpes_planted.pth")
    attempt("own", os.path.join(os.environ["TMPDIR"], "scratch"))
    attempt("cwd", "scratch")
    return " ".join(out)
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = "mpes_walled-1.0.dist-info"
    files = {"mpes_walled/__init__.py": "RESULT = %r\n" % _attempts(),
             dist + "/METADATA": "Metadata-Version: 2.1\nName: mpes_walled\nVersion: 1.0\n",
             dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: mpes-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ["%s,sha256=%s,%d" % (p, base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode(),
                                   len(t.encode())) for p, t in files.items()]
    files[dist + "/RECORD"] = "\n".join(record + [dist + "/RECORD,,"]) + "\n"
    name = "mpes_walled-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for p, t in files.items():
            z.writestr(p, t)
    return name
)PY";
}

}  // namespace

TEST_CASE("a build writes only its own directories, not the environment being built", "[installer]") {
  std::vector<std::string> installers = {"/nonexistent/uv"};  // pip
  if (auto uv = sandbox::find_executable("uv")) installers.push_back(*uv);
  for (const auto& uv_path : installers) {
    INFO("uv_path " << uv_path);
    fixtures::TempDir dir;
    fixtures::TempDir links;
    const std::string target = dir.path() + "/site";
    fs::create_directories(target);
    fixtures::write_sdist(links.path(), "mpes_walled", "1.0", walled_backend(target));
    engine::deps::InstallerOptions options;
    options.uv_path = uv_path;
    options.index.offline = true;
    options.index.find_links = {links.path(), wheels()};
    options.build_python_path = stand_in_path();
    auto who = engine::deps::installer_identity(options);
    REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
    engine::deps::InstallRequest request;
    request.interpreter = &debian_python();
    request.requirements = {"mpes_walled", "mpes_leaf"};
    request.target = target;
    request.cache_dir = dir.path() + "/cache";
    auto outcome = engine::deps::run_installer(options, request, {}, nullptr);
    INFO(outcome.error << outcome.process.err);
    REQUIRE(outcome.ok);
    const auto probe = sandbox::probe_landlock();
    CHECK(outcome.builds_confined == (probe.abi >= 1));
    const auto result = fixtures::run_python(kDebianPython, {target}, "import mpes_walled; print(mpes_walled.RESULT)");
    INFO(result);
    CHECK_THAT(result, Catch::Contains("own=written") && Catch::Contains("cwd=written"));
    if (probe.abi < 1) {
      WARN("no Landlock: builds are not confined");
      continue;
    }
    CHECK_THAT(result, Catch::Contains("target=Permission_denied") && Catch::Contains("tmp=Permission_denied"));
    CHECK_FALSE(fs::exists(target + "/mpes_planted.pth"));
    // The bytecode uv was not asked for is there all the same.
    CHECK(fs::exists(target + "/mpes_leaf/__pycache__"));
  }
}

TEST_CASE("the builds' interpreter stand-in: the real one under its mount, the stand-in over it", "[installer]") {
  using engine::deps::real_interpreter_path;
  CHECK(real_interpreter_path("/usr/bin/python3.11") == "/tmp/.mpes-interpreter/bin/python3.11");
  CHECK(real_interpreter_path("/root/.local/share/uv/python/cpython-3.12/bin/python3.12") ==
        "/tmp/.mpes-interpreter/bin/python3.12");
  CHECK(real_interpreter_path("/python3").empty());   // no prefix above its directory
  CHECK(real_interpreter_path("python3").empty());    // not a canonical path
  CHECK(engine::deps::build_python_binds("/opt/s", "/python3").empty());

  engine::Interpreter py;
  py.executable = "/usr/bin/python3";  // a symlink: the canonical file is the one replaced
  py.prefix = py.base_prefix = "/usr";
  const std::string canonical = fs::canonical(py.executable).string();
  const engine::IndexOptions index;
  auto plain = engine::deps::installer_sandbox("bwrap", py, "/opt/uv", index, "/t", "", {"uv"});
  for (const auto& bind : plain.binds) CHECK(bind.dest != canonical);
  auto box = engine::deps::installer_sandbox("bwrap", py, "/opt/uv", index, "/t", "", {"uv"}, {}, "/opt/stand-in");
  REQUIRE(box.binds.size() == plain.binds.size() + 2);
  // Last, in this order: bwrap mounts in argument order, so the stand-in covers the real file.
  CHECK(box.binds[box.binds.size() - 2].source == fs::path(canonical).parent_path().parent_path().string());
  CHECK(box.binds[box.binds.size() - 2].dest == engine::deps::kRealInterpreterMount);
  CHECK(box.binds.back().source == "/opt/stand-in");
  CHECK(box.binds.back().dest == canonical);
}

TEST_CASE("with builds kept off the network, pip refuses what needs a build, saying why", "[installer]") {
  fixtures::TempDir dir;
  fixtures::TempDir links;
  fixtures::TempDir empty_index;
  fixtures::write_sdist(links.path(), "mpes_needs_build", "1.0", "raise SystemExit('BACKEND_' + 'RAN')\n");
  const std::string target = dir.path() + "/site";
  fs::create_directories(target);
  engine::deps::InstallerOptions options;
  options.uv_path = "/nonexistent/uv";
  options.index.index_url = "file://" + empty_index.path();  // an index, not --offline: no network needed
  options.index.find_links = {links.path()};
  options.builds_without_network = true;
  options.build_python_path = stand_in_path();
  auto who = engine::deps::installer_identity(options);
  REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
  engine::deps::InstallRequest request;
  request.interpreter = &debian_python();
  request.requirements = {"mpes_needs_build"};
  request.target = target;
  request.cache_dir = dir.path() + "/cache";
  auto outcome = engine::deps::run_installer(options, request, {}, nullptr);
  INFO(outcome.error);
  CHECK_FALSE(outcome.ok);
  CHECK(outcome.error.find("with --network off builds from source run without network, which needs uv") !=
        std::string::npos);
  CHECK(outcome.error.find("BACKEND_RAN") == std::string::npos);

  // Control: with builds allowed their network, the same install goes on to run the backend.
  options.builds_without_network = false;
  auto built = engine::deps::run_installer(options, request, {}, nullptr);
  INFO(built.error);
  CHECK(built.error.find("which needs uv") == std::string::npos);
  CHECK(built.error.find("BACKEND_RAN") != std::string::npos);
}

TEST_CASE("uv installs offline when it exists", "[installer][uv]") {
  auto uv = sandbox::find_executable("uv");
  if (!uv) {
    WARN("SKIPPED: uv is not installed on this machine; the uv installer tests did not run");
    return;
  }
  fixtures::TempDir dir;
  const std::string target = dir.path() + "/site";
  fs::create_directories(target);
  engine::deps::InstallerOptions options;
  options.uv_path = *uv;
  options.index = offline_index();
  auto who = engine::deps::installer_identity(options);
  REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
  engine::deps::InstallRequest request;
  request.interpreter = &debian_python();
  request.requirements = {"mpes_chain", "mpes-leaf==1.0"};
  request.target = target;
  request.cache_dir = dir.path() + "/cache";
  auto outcome = engine::deps::run_installer(options, request, {}, nullptr);
  INFO(outcome.process.err);
  REQUIRE(outcome.ok);
  CHECK(outcome.installer == "uv");
  auto out = fixtures::run_python(kDebianPython, {target}, "import mpes_chain; print(mpes_chain.LEAF)");
  CHECK(out == "1.0\n");

  request.requirements = {"mpes-no-such-package"};
  fs::remove_all(target);
  fs::create_directories(target);
  REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
  auto failed = engine::deps::run_installer(options, request, {}, nullptr);
  CHECK_FALSE(failed.ok);
  CHECK(failed.error.find("mpes-no-such-package") != std::string::npos);
}

TEST_CASE("without uv and without pip the error says what to install", "[installer]") {
  fixtures::TempDir dir;
  engine::deps::InstallerOptions options;
  options.uv_path = "/nonexistent/uv";
  engine::deps::InstallRequest request;
  request.interpreter = &debian_python();
  request.requirements = {"x"};
  request.target = dir.path();
  request.cache_dir = dir.path() + "/cache";
  request.interpreter_has_pip = false;
  CHECK_THROWS_WITH(engine::deps::run_installer(options, request, {}, nullptr),
                    Catch::Contains("uv") && Catch::Contains("pip") && Catch::Contains("/nonexistent/uv"));
  options.bwrap_path = "/nonexistent/bwrap";
  request.interpreter_has_pip = true;
  CHECK_THROWS_WITH(engine::deps::run_installer(options, request, {}, nullptr),
                    Catch::Contains("apt install bubblewrap"));
}

// ---- the asynchronous facade

TEST_CASE("ensure: interpreter-provided requirements need no environment", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  auto r = ensure_sync(io, envs, debian_python(), reqs({"numpy", "pandas"}));
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK_FALSE(r.env_root.has_value());
  CHECK(contains(r.import_names, "numpy"));
  CHECK(contains(r.import_names, "pandas"));
  REQUIRE(r.from_interpreter.size() == 2);
  CHECK(r.from_interpreter[0].rfind("numpy ", 0) == 0);
  CHECK(envs.installer_runs() == 0);
  // A requirement whose marker does not apply to this interpreter is not even checked.
  auto skipped = ensure_sync(io, envs, debian_python(), reqs({"mpes-nothing; python_version < '3.0'"}));
  CHECK(skipped.ok());
  CHECK_FALSE(skipped.env_root.has_value());
  CHECK(envs.installer_runs() == 0);
}

TEST_CASE("ensure: markers are evaluated with the interpreter's probed values", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  engine::Interpreter interp = debian_python();
  interp.markers = engine::marker_environment(interp);
  interp.markers.platform_machine = "mpes-arch";  // as its probe would have said
  // Applies only on another machine than the interpreter's: nothing to check or install.
  auto r = ensure_sync(io, envs, interp, reqs({"mpes-nothing; platform_machine != 'mpes-arch'"}));
  INFO(r.error);
  CHECK(r.ok());
  CHECK_FALSE(r.env_root.has_value());
  CHECK(envs.installer_runs() == 0);
}

TEST_CASE("ensure: installs a chain once, then reuses it without running an installer", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  std::vector<std::string> stages;
  auto first = ensure_sync(io, envs, debian_python(), reqs({"mpes_chain", "numpy"}),
                           [&](const std::string& stage, const std::string&) { stages.push_back(stage); });
  INFO(first.error);
  REQUIRE(first.ok());
  REQUIRE(first.env_root.has_value());
  CHECK_FALSE(first.reused);
  CHECK(first.env_root->rfind(cache.path() + "/envs/", 0) == 0);
  CHECK(first.installed == std::vector<std::string>{"mpes_chain"});  // numpy came from Debian
  CHECK(contains(first.import_names, "mpes_chain"));
  CHECK_FALSE(contains(first.import_names, "mpes_leaf"));  // not declared: not pre-imported
  CHECK(contains(first.import_names, "numpy"));
  CHECK(contains(stages, "resolving"));
  CHECK(contains(stages, "installing"));
  CHECK(envs.installer_runs() == 1);
  CHECK(leaf_version(first) == "2.0");
  // The environment belongs to the server and is not writable by others.
  struct stat st{};
  REQUIRE(::stat((*first.site_dir + "/mpes_chain/__init__.py").c_str(), &st) == 0);
  CHECK(st.st_uid == ::geteuid());
  CHECK((st.st_mode & 022) == 0);

  auto second = ensure_sync(io, envs, debian_python(), reqs({"numpy", "mpes-chain"}));
  REQUIRE(second.ok());
  CHECK(second.reused);
  CHECK(second.env_root == first.env_root);
  CHECK(envs.installer_runs() == 1);

  // A restarted server (a new instance on the same cache) reuses it too.
  asio::io_context io2;
  Environments restarted(io2, offline_config(cache.path()));
  auto third = ensure_sync(io2, restarted, debian_python(), reqs({"mpes_chain"}));
  REQUIRE(third.ok());
  CHECK(third.reused);
  CHECK(third.env_root == first.env_root);
  CHECK(restarted.installer_runs() == 0);
  CHECK(contains(third.import_names, "mpes_chain"));
}

TEST_CASE("ensure: the merged set with the last spec winning reaches the installer", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  auto merged = engine::merge_requirements(reqs({"mpes-leaf==2.0", "mpes_chain"}), reqs({"mpes_leaf==1.0"}));
  auto r = ensure_sync(io, envs, debian_python(), merged);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(leaf_version(r) == "1.0");
  CHECK(contains(r.installed, "mpes_leaf==1.0"));
  CHECK_FALSE(contains(r.installed, "mpes-leaf==2.0"));
}

TEST_CASE("ensure: concurrent calls for the same new set install once", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  std::vector<EnvResult> results;
  auto guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io.get_executor());
  for (int i = 0; i < 3; ++i) {
    envs.ensure(debian_python(), reqs({"mpes_slow", "mpes_leaf==1.0"}), {}, [&](EnvResult r) {
      results.push_back(std::move(r));
      if (results.size() == 3) guard.reset();
    });
  }
  io.run();
  REQUIRE(results.size() == 3);
  CHECK(envs.installer_runs() == 1);
  for (const auto& r : results) {
    INFO(r.error);
    REQUIRE(r.ok());
    CHECK(r.env_root == results[0].env_root);
    CHECK(contains(r.import_names, "mpes_slow"));
  }
}

TEST_CASE("ensure: failures carry the installer's decisive lines", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));

  auto unknown = ensure_sync(io, envs, debian_python(), reqs({"mpes-no-such-package"}));
  CHECK(unknown.status == EnvResult::Status::install_failed);
  CHECK(unknown.error.find("No matching distribution found for mpes-no-such-package") != std::string::npos);
  CHECK(unknown.error.find("Looking in links") == std::string::npos);  // not the whole log

  auto version = ensure_sync(io, envs, debian_python(), reqs({"mpes-leaf>=3"}));
  CHECK(version.status == EnvResult::Status::install_failed);
  CHECK(version.error.find("from versions: 1.0, 2.0") != std::string::npos);

  auto python = ensure_sync(io, envs, debian_python(), reqs({"mpes_future"}));
  CHECK(python.status == EnvResult::Status::install_failed);
  CHECK(python.error.find(">=3.99") != std::string::npos);

  auto conflict = ensure_sync(io, envs, debian_python(), reqs({"mpes_modern", "mpes-leaf==1.0"}));
  CHECK(conflict.status == EnvResult::Status::install_failed);
  CHECK(conflict.error.find("conflict") != std::string::npos);
  CHECK(conflict.error.find("mpes-leaf>=2.0") != std::string::npos);

  // Nothing of a failed install is left in the store.
  CHECK(fs::is_empty(cache.path() + "/envs"));
}

TEST_CASE("ensure: a killed install leaves no usable environment", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  bool killed = false;
  // mpes_hang's build backend sleeps; kill the installer once pip is working on it.
  auto r = ensure_sync(io, envs, debian_python(), reqs({"mpes_hang", "mpes_leaf"}),
                       [&](const std::string&, const std::string& message) {
                         if (!killed && message.find("mpes_hang") != std::string::npos &&
                             message.rfind("Processing", 0) == 0) {
                           killed = true;
                           envs.kill_installs();
                         }
                       });
  REQUIRE(killed);
  CHECK(r.status == EnvResult::Status::error);
  CHECK(r.error.find("stopped") != std::string::npos);
  CHECK_FALSE(r.env_root.has_value());
  // No environment, no build directory: only the (empty) envs dir itself.
  CHECK(fs::is_empty(cache.path() + "/envs"));
  engine::EnvironmentStore store(cache.path(), 1ull << 30);
  store.open();
  CHECK(store.usage().environments == 0);
}

TEST_CASE("ensure: the LRU bound evicts environments no one holds", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  auto config = offline_config(cache.path());
  config.max_bytes = 1;  // every new environment pushes out every unheld one
  Environments envs(io, config);
  auto a = ensure_sync(io, envs, debian_python(), reqs({"mpes_leaf==1.0"}));
  REQUIRE(a.ok());
  REQUIRE(a.env_root.has_value());
  const std::string a_root = *a.env_root;
  auto b = ensure_sync(io, envs, debian_python(), reqs({"mpes_leaf==2.0"}));
  REQUIRE(b.ok());
  CHECK(fs::exists(a_root));  // `a` still holds its lease (a zygote would)
  a = EnvResult{};            // released
  auto c = ensure_sync(io, envs, debian_python(), reqs({"mpes_chain"}));
  REQUIRE(c.ok());
  CHECK_FALSE(fs::exists(a_root));
  CHECK(fs::exists(*b.env_root));  // still leased by `b`
  CHECK(fs::exists(*c.env_root));
  // An evicted set is installed again when asked for.
  auto again = ensure_sync(io, envs, debian_python(), reqs({"mpes_leaf==1.0"}));
  REQUIRE(again.ok());
  CHECK_FALSE(again.reused);
  CHECK(envs.installer_runs() == 4);
}

TEST_CASE("warm-up lists parse and warming skips what the interpreter has", "[environments]") {
  CHECK(engine::parse_package_list("# comment\nnumpy\n\n  pandas  # data\r\n") ==
        std::vector<std::string>{"numpy", "pandas"});
  fixtures::TempDir cache;
  asio::io_context io;
  auto config = offline_config(cache.path());
  config.installer.index.offline = false;
  Environments envs(io, config);
  std::optional<std::string> status;
  auto guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io.get_executor());
  envs.warm_cache(debian_python(), {"numpy", "pandas"}, [&](std::string s) {
    status = s;
    guard.reset();
  });
  io.run();
  REQUIRE(status.has_value());
  CHECK(status->rfind("done", 0) == 0);
  CHECK(envs.installer_runs() == 0);
}

TEST_CASE("shutdown kills a running install and reports back", "[environments]") {
  fixtures::TempDir cache;
  asio::io_context io;
  Environments envs(io, offline_config(cache.path()));
  std::optional<EnvResult> result;
  bool shut = false;
  envs.ensure(debian_python(), reqs({"mpes_hang"}),
              [&](const std::string&, const std::string& message) {
                if (message.rfind("Processing", 0) == 0) envs.shutdown([&] { shut = true; });
              },
              [&](EnvResult r) { result = std::move(r); });
  auto guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io.get_executor());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(100);
  while (!(shut && result) && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  REQUIRE(shut);
  REQUIRE(result.has_value());
  CHECK(result->status == EnvResult::Status::error);
  CHECK(envs.installer_runs() == 1);
  // After shutdown new calls fail at once instead of hanging.
  std::optional<EnvResult> late;
  envs.ensure(debian_python(), reqs({"mpes_leaf"}), {}, [&](EnvResult r) { late = std::move(r); });
  while (!late && std::chrono::steady_clock::now() < deadline) io.run_one_for(std::chrono::milliseconds(100));
  REQUIRE(late.has_value());
  CHECK(late->status == EnvResult::Status::error);
}

TEST_CASE("the installer gets the runs' limits; rlimits stand in only where no cgroup counts",
          "[installer]") {
  engine::deps::InstallerOptions options;
  options.timeout_seconds = 42;
  options.limits.memory_bytes = 300ull << 20;
  options.limits.max_processes = 33;
  options.limits.file_size_bytes = 5ull << 20;
  engine::deps::InstallRequest request;
  auto value = [](const std::vector<sandbox::ResourceLimit>& limits, int resource) -> long long {
    for (const auto& l : limits) {
      if (l.resource == resource) return static_cast<long long>(l.value);
    }
    return -1;
  };
  auto without = engine::deps::installer_rlimits(options, request);
  CHECK(value(without, RLIMIT_FSIZE) == (5ll << 20));
  CHECK(value(without, RLIMIT_CORE) == 0);
  CHECK(value(without, RLIMIT_CPU) == 42);
  CHECK(value(without, RLIMIT_DATA) == (300ll << 20));
  CHECK(value(without, RLIMIT_NPROC) == 33);
  request.memory_counted = request.processes_counted = true;
  auto with = engine::deps::installer_rlimits(options, request);
  CHECK(value(with, RLIMIT_DATA) == -1);
  CHECK(value(with, RLIMIT_NPROC) == -1);
  CHECK(value(with, RLIMIT_FSIZE) == (5ll << 20));
}
