// What of the user's uv/pip configuration reaches a sandboxed installer: variables, config files,
// and the local paths they name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/environments/installer.h"
#include "engine/environments/installer_config.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using engine::deps::InstallerKind;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("TLS, proxy and index variables pass to the installer; the rest does not", "[installer][config]") {
  using engine::deps::passes_to_installer;
  for (auto kind : {InstallerKind::uv, InstallerKind::pip}) {
    CHECK(passes_to_installer(kind, "SSL_CERT_FILE"));
    CHECK(passes_to_installer(kind, "SSL_CERT_DIR"));
    CHECK(passes_to_installer(kind, "REQUESTS_CA_BUNDLE"));
    CHECK(passes_to_installer(kind, "https_proxy"));
    CHECK(passes_to_installer(kind, "NO_PROXY"));
    CHECK_FALSE(passes_to_installer(kind, "HOME"));
    CHECK_FALSE(passes_to_installer(kind, "AWS_SECRET_ACCESS_KEY"));
    CHECK_FALSE(passes_to_installer(kind, "PYTHONPATH"));
    CHECK_FALSE(passes_to_installer(kind, "LD_PRELOAD"));
  }
  CHECK(passes_to_installer(InstallerKind::uv, "UV_INDEX_URL"));
  CHECK(passes_to_installer(InstallerKind::uv, "UV_DEFAULT_INDEX"));
  CHECK(passes_to_installer(InstallerKind::uv, "UV_INDEX_PRIVATE_PASSWORD"));
  CHECK(passes_to_installer(InstallerKind::uv, "UV_NATIVE_TLS"));
  CHECK(passes_to_installer(InstallerKind::uv, "UV_SYSTEM_CERTS"));
  // The server decides where uv writes and which interpreter it installs for.
  CHECK_FALSE(passes_to_installer(InstallerKind::uv, "UV_CACHE_DIR"));
  CHECK_FALSE(passes_to_installer(InstallerKind::uv, "UV_PYTHON"));
  CHECK_FALSE(passes_to_installer(InstallerKind::uv, "UV_LINK_MODE"));
  CHECK_FALSE(passes_to_installer(InstallerKind::uv, "UV_SYSTEM_PYTHON"));
  CHECK_FALSE(passes_to_installer(InstallerKind::uv, "PIP_INDEX_URL"));
  CHECK(passes_to_installer(InstallerKind::pip, "PIP_INDEX_URL"));
  CHECK(passes_to_installer(InstallerKind::pip, "PIP_CERT"));
  CHECK(passes_to_installer(InstallerKind::pip, "PIP_FIND_LINKS"));
  CHECK_FALSE(passes_to_installer(InstallerKind::pip, "PIP_TARGET"));
  CHECK_FALSE(passes_to_installer(InstallerKind::pip, "PIP_CACHE_DIR"));
  CHECK_FALSE(passes_to_installer(InstallerKind::pip, "UV_INDEX_URL"));
}

TEST_CASE("local paths named in values and configuration files", "[installer][config]") {
  fixtures::TempDir dir;
  const std::string wheels = dir.path() + "/wheels";
  const std::string ca = dir.path() + "/ca.pem";
  fs::create_directories(wheels);
  write(ca, "x");
  using engine::deps::local_paths_in;
  CHECK(local_paths_in(ca) == std::vector<std::string>{ca});
  CHECK(local_paths_in("file://" + wheels + "/ https://example.invalid/simple " + dir.path() + "/missing") ==
        std::vector<std::string>{wheels});
  // TOML and INI shapes, "name=" prefixes (UV_INDEX), duplicates once.
  CHECK(local_paths_in("find-links = [\"" + wheels + "\", '" + ca + "']\nname=file://" + wheels) ==
        std::vector<std::string>{wheels, ca});
  // Never the root, /proc, /sys or /dev.
  CHECK(local_paths_in("/ /proc/self /sys /dev/null").empty());
  // A local index (PEP 503 "simple") links to files beside it (../../files/x.whl): its root.
  fs::create_directories(dir.path() + "/index/simple/pkg");
  fs::create_directories(dir.path() + "/index/files");
  CHECK(local_paths_in("file://" + dir.path() + "/index/simple/") == std::vector<std::string>{dir.path() + "/index"});
  CHECK(local_paths_in(dir.path() + "/index/simple/pkg") == std::vector<std::string>{dir.path() + "/index/simple/pkg"});
}

TEST_CASE("installer_passthrough: variables, the user's uv.toml and what it names", "[installer][config]") {
  fixtures::TempDir dir;
  const std::string home = dir.path() + "/home";
  const std::string wheels = dir.path() + "/wheels";
  const std::string ca = dir.path() + "/ca.pem";
  fs::create_directories(wheels);
  write(ca, "x");
  write(home + "/.config/uv/uv.toml", "find-links = [\"" + wheels + "\"]\n");
  const engine::deps::Environ env = {"HOME=" + home, "SSL_CERT_FILE=" + ca, "UV_INDEX_URL=https://idx.invalid/simple",
                                     "UV_CACHE_DIR=/elsewhere", "SECRET_TOKEN=s3cret", "PIP_INDEX_URL=https://p.invalid/"};
  auto uv = engine::deps::installer_passthrough(InstallerKind::uv, env);
  CHECK(contains(uv.env, "SSL_CERT_FILE=" + ca));
  CHECK(contains(uv.env, "UV_INDEX_URL=https://idx.invalid/simple"));
  CHECK(contains(uv.env, "XDG_CONFIG_HOME=" + home + "/.config"));  // the sandbox's HOME is empty
  CHECK_FALSE(contains(uv.env, "UV_CACHE_DIR=/elsewhere"));
  CHECK_FALSE(contains(uv.env, "SECRET_TOKEN=s3cret"));
  CHECK_FALSE(contains(uv.env, "PIP_INDEX_URL=https://p.invalid/"));
  CHECK(contains(uv.host_paths, ca));
  CHECK(contains(uv.host_paths, home + "/.config/uv/uv.toml"));
  CHECK(contains(uv.host_paths, wheels));

  // UV_NO_CONFIG: no file is read; UV_CONFIG_FILE: only that one.
  auto none = engine::deps::installer_config_files(InstallerKind::uv, {"HOME=" + home, "UV_NO_CONFIG=1"});
  CHECK(std::none_of(none.begin(), none.end(), [&](const std::string& f) { return f.rfind(home, 0) == 0; }));
  write(dir.path() + "/explicit.toml", "");
  CHECK(engine::deps::installer_config_files(InstallerKind::uv, {"HOME=" + home, "UV_CONFIG_FILE=" + dir.path() + "/explicit.toml"}) ==
        std::vector<std::string>{dir.path() + "/explicit.toml"});
}

TEST_CASE("installer_passthrough: pip's configuration files and what they name", "[installer][config]") {
  fixtures::TempDir dir;
  const std::string home = dir.path() + "/home";
  const std::string xdg_dirs = dir.path() + "/xdg";
  const std::string constraints = dir.path() + "/constraints.txt";
  write(constraints, "");
  write(xdg_dirs + "/pip/pip.conf", "[global]\nconstraint = " + constraints + "\n");
  write(home + "/.config/pip/pip.conf", "[global]\ntimeout = 5\n");
  const engine::deps::Environ env = {"HOME=" + home, "XDG_CONFIG_DIRS=" + xdg_dirs, "PIP_CERT=/nonexistent.pem"};
  auto pip = engine::deps::installer_passthrough(InstallerKind::pip, env);
  CHECK(contains(pip.host_paths, xdg_dirs + "/pip/pip.conf"));
  CHECK(contains(pip.host_paths, home + "/.config/pip/pip.conf"));
  CHECK(contains(pip.host_paths, constraints));
  CHECK(contains(pip.env, "XDG_CONFIG_DIRS=" + xdg_dirs));
  CHECK(contains(pip.env, "XDG_CONFIG_HOME=" + home + "/.config"));
  CHECK(contains(pip.env, "PIP_CERT=/nonexistent.pem"));  // passed; nothing to mount
  CHECK_FALSE(contains(pip.host_paths, "/nonexistent.pem"));
  // PIP_CONFIG_FILE=/dev/null: pip reads no configuration, so none is mounted.
  auto off = engine::deps::installer_passthrough(InstallerKind::pip,
                                                  {"HOME=" + home, "XDG_CONFIG_DIRS=" + xdg_dirs, "PIP_CONFIG_FILE=/dev/null"});
  CHECK(off.host_paths.empty());
  CHECK(contains(off.env, "PIP_CONFIG_FILE=/dev/null"));
}

TEST_CASE("the configuration digest changes with what reaches an installer, and only that", "[installer][config]") {
  fixtures::TempDir dir;
  const std::string home = dir.path() + "/home";
  const engine::deps::Environ base = {"HOME=" + home, "XDG_CONFIG_DIRS=" + dir.path() + "/none"};
  using engine::deps::installer_configuration_digest;
  const auto none = installer_configuration_digest(base);
  CHECK(none.size() == 64);
  CHECK(installer_configuration_digest(base) == none);
  // A variable that never reaches an installer changes nothing; an index variable does.
  auto with = [&](std::string entry) {
    auto env = base;
    env.push_back(std::move(entry));
    return installer_configuration_digest(env);
  };
  CHECK(with("SECRET_TOKEN=s3cret") == none);
  CHECK(with("UV_INDEX_URL=https://one.invalid/simple") != none);
  CHECK(with("UV_INDEX_URL=https://one.invalid/simple") != with("UV_INDEX_URL=https://two.invalid/simple"));
  CHECK(with("PIP_EXTRA_INDEX_URL=https://one.invalid/simple") != none);
  // The user's pip.conf and uv.toml count by their contents.
  write(home + "/.config/pip/pip.conf", "[global]\nindex-url = https://one.invalid/simple\n");
  const auto pip_one = installer_configuration_digest(base);
  CHECK(pip_one != none);
  write(home + "/.config/pip/pip.conf", "[global]\nindex-url = https://two.invalid/simple\n");
  CHECK(installer_configuration_digest(base) != pip_one);
  write(home + "/.config/uv/uv.toml", "index-url = \"https://one.invalid/simple\"\n");
  CHECK(installer_configuration_digest(base) != pip_one);
}

TEST_CASE("the installer's sandbox mounts the user's configuration read-only at its place", "[installer][config]") {
  engine::Interpreter py;
  py.executable = "/usr/bin/python3";
  py.prefix = py.base_prefix = "/usr";
  py.major_minor = "3.11";
  fixtures::TempDir dir;
  const std::string ca = dir.path() + "/ca.pem";
  write(ca, "x");
  auto box = engine::deps::installer_sandbox("bwrap", py, "", {}, dir.path() + "/t", dir.path() + "/c", {"true"}, {ca});
  CHECK(std::any_of(box.binds.begin(), box.binds.end(),
                    [&](const sandbox::Bind& b) { return b.source == ca && b.dest == ca; }));
  CHECK(std::find(box.writable.begin(), box.writable.end(), ca) == box.writable.end());
}

TEST_CASE("a find-links directory the installer's uid cannot read is named with the fix", "[installer][config]") {
  using engine::deps::find_links_access_problem;
  fixtures::TempDir dir;
  const std::string wheels = dir.path() + "/wheels";
  fs::create_directories(wheels);
  write(wheels + "/a-1.0-py3-none-any.whl", "x");
  fs::permissions(wheels, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(wheels + "/a-1.0-py3-none-any.whl", fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  CHECK(find_links_access_problem({wheels, "https://links.invalid/", dir.path() + "/missing"}, 65534).empty());
  CHECK(find_links_access_problem({"file://" + wheels}, 65534).empty());

  fs::permissions(wheels + "/a-1.0-py3-none-any.whl", fs::perms::owner_read | fs::perms::owner_write);
  auto file_problem = find_links_access_problem({wheels}, 65534);
  CHECK_THAT(file_problem, Catch::Contains("a-1.0-py3-none-any.whl") && Catch::Contains("chmod o+r") &&
                               Catch::Contains("uid 65534") && Catch::Contains("mode 0600"));

  fs::permissions(wheels, fs::perms::owner_all);
  auto dir_problem = find_links_access_problem({"https://links.invalid/", wheels}, 65534);
  CHECK_THAT(dir_problem, Catch::StartsWith("--find-links " + wheels + ":") && Catch::Contains("chmod o+rx " + wheels) &&
                              Catch::Contains("mode 0700"));
  CHECK(dir_problem.find('\n') == std::string::npos);
}
