// Where a build from source may write (build_python.h): the directories the front-end made for it,
// found in its invocation, laid out as uv and pip lay them out in the installer sandbox's /tmp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/environments/build_python.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using engine::deps::build_writable_dirs;
using engine::deps::tmp_paths_in;

namespace {

void touch(const std::string& path, const std::string& text = "") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("tmp_paths_in finds the names beneath the root, each up to a quote, space or bracket", "[build_python]") {
  CHECK(tmp_paths_in("/tmp/a") == std::vector<std::string>{"/tmp/a"});
  CHECK(tmp_paths_in("--prefix=/tmp/x/overlay") == std::vector<std::string>{"/tmp/x/overlay"});
  CHECK(tmp_paths_in(R"(f(__import__("os").fsdecode(b"/tmp/c/builds-v0/.tmpW"), {}, None) "/tmp/c/v/r.txt")") ==
        std::vector<std::string>{"/tmp/c/builds-v0/.tmpW", "/tmp/c/v/r.txt"});
  CHECK(tmp_paths_in(R"({"kwargs": {"wheel_directory": "/tmp/pip-wheel-1", "config_settings": {}}})") ==
        std::vector<std::string>{"/tmp/pip-wheel-1"});
  CHECK(tmp_paths_in("/var/tmp/x /usr/tmp/y").empty());  // not beneath /tmp
  CHECK(tmp_paths_in("/tmp/ /tmp").empty());              // the root itself names nothing
  CHECK(tmp_paths_in("/r/t/a b", "/r/t") == std::vector<std::string>{"/r/t/a"});
}

TEST_CASE("a uv build writes its source tree, its build environment and the directories its program names",
          "[build_python]") {
  fixtures::TempDir tmp;
  const std::string root = fs::canonical(tmp.path()).string();
  const std::string cache = root + "/.tmpCache";
  const std::string src = cache + "/sdists-v11/index/0123/pkg/1.0/abc/src";
  const std::string venv = cache + "/builds-v0/.tmpVenv";
  const std::string wheel_dir = cache + "/builds-v0/.tmpWheel";
  const std::string other_wheel_dir = cache + "/builds-v0/.tmpOther";
  touch(src + "/pyproject.toml");
  touch(venv + "/pyvenv.cfg", "home = /usr/bin\n");
  touch(venv + "/bin/python");
  fs::create_directories(wheel_dir);
  fs::create_directories(other_wheel_dir);
  fs::create_directories(cache + "/archive-v0/xyz/other_pkg");
  const std::string program = "import sys\nimport mpes_backend as backend\n"
                              "wheel_filename = backend.build_wheel(__import__(\"os\").fsdecode(b\"" + wheel_dir +
                              "\"), {}, None)\nwith open(__import__(\"os\").fsdecode(b\"" + venv +
                              "/build_wheel.txt\"), \"w\") as fp:\n    fp.write(wheel_filename)\n";
  const auto dirs = build_writable_dirs({venv + "/bin/python", "-c", program}, src, root);
  INFO(nlohmann::json(dirs).dump());
  CHECK(has(dirs, src));
  CHECK(has(dirs, venv));
  CHECK(has(dirs, wheel_dir));
  CHECK(dirs.size() == 3);  // not the cache, its unpacked wheels, another build's directory, the root
  CHECK_FALSE(has(dirs, other_wheel_dir));
  CHECK_FALSE(has(dirs, cache));

  // uv asking the interpreter about itself, from the sandbox's /tmp: nothing.
  CHECK(build_writable_dirs({"/usr/bin/python3", "-I", "-B", "-c", "import sys; print(sys.path)"}, root, root).empty());
}

TEST_CASE("a pip build writes its source tree and the directories named in its hook's input", "[build_python]") {
  fixtures::TempDir tmp;
  const std::string root = fs::canonical(tmp.path()).string();
  const std::string src = root + "/pip-install-1/pkg_0123";
  const std::string control = root + "/tmpControl";
  const std::string wheel_dir = root + "/pip-wheel-1";
  touch(src + "/pyproject.toml");
  fs::create_directories(wheel_dir);
  fs::create_directories(root + "/pip-target-1/lib/python");
  touch(control + "/input.json", R"({"kwargs": {"wheel_directory": ")" + wheel_dir +
                                      R"(", "config_settings": {}, "metadata_directory": null}})");
  const std::vector<std::string> argv = {"/usr/bin/python3", "/usr/lib/python3/dist-packages/pip/_vendor/pyproject_hooks/"
                                         "_in_process/_in_process.py", "build_wheel", control};
  const auto dirs = build_writable_dirs(argv, src, root);
  INFO(nlohmann::json(dirs).dump());
  CHECK(has(dirs, src));
  CHECK(has(dirs, control));
  CHECK(has(dirs, wheel_dir));
  CHECK(dirs.size() == 3);  // not pip's staging of the environment (pip-target-*)

  // pip installing a build's requirements: its --prefix, not yet made, stands for its parent.
  fs::create_directories(root + "/pip-build-env-1/site");
  const auto env_dirs = build_writable_dirs(
      {"/usr/bin/python3", "/usr/lib/python3/dist-packages/pip/__pip-runner__.py", "install", "--ignore-installed",
       "--no-user", "--prefix", root + "/pip-build-env-1/overlay", "--", "setuptools>=40.8.0"},
      root, root);
  CHECK(env_dirs == std::vector<std::string>{root + "/pip-build-env-1"});
  // ... and registering what it builds in pip's build tracker (its environment, not its argv).
  fs::create_directories(root + "/pip-build-tracker-1");
  const auto tracked = build_writable_dirs({"/usr/bin/python3", "-c", "pass"}, root, root,
                                           {"PIP_BUILD_TRACKER=" + root + "/pip-build-tracker-1",
                                            "OTHER=" + root + "/pip-wheel-1", "PIP_REQ_TRACKER=/var/tmp"});
  CHECK(tracked == std::vector<std::string>{root + "/pip-build-tracker-1"});
}

TEST_CASE("nothing outside the root, the root itself, a file, a symlink or the interpreter's mount is writable",
          "[build_python]") {
  fixtures::TempDir tmp;
  fixtures::TempDir outside;
  const std::string root = fs::canonical(tmp.path()).string();
  touch(root + "/file");
  fs::create_directories(root + "/real");
  fs::create_directory_symlink(root + "/real", root + "/link");
  fs::create_directory_symlink(outside.path(), root + "/out");
  fs::create_directories(root + "/.mpes-interpreter/bin");
  const auto dirs = build_writable_dirs(
      {"/usr/bin/python3", "-c",
       "'" + root + "/file' '" + root + "/link' '" + root + "/out' '" + root + "/.mpes-interpreter/bin' '" + root +
           "/missing/deeper' '" + root + "/nothing' '" + root + "/../etc'"},
      outside.path(), root);
  INFO(nlohmann::json(dirs).dump());
  CHECK(dirs.empty());
  // A name not yet made stands for its parent directory when that is beneath the root.
  CHECK(build_writable_dirs({"/usr/bin/python3", root + "/real/result.txt"}, "/", root) ==
        std::vector<std::string>{root + "/real"});
}
