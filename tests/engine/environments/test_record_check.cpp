// Verifying an installed environment against its distributions' RECORD (record_check.h), on real
// installs of the wheel fixtures by pip (and uv where it exists), tampered with afterwards.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/environments/installer.h"
#include "engine/environments/record_check.h"
#include "sandbox/path_search.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using engine::deps::check_records;
using engine::deps::record_digest;
using engine::deps::record_fields;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

bool mentions(const engine::deps::RecordCheck& check, const std::string& text) {
  for (const auto& p : check.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

// Installs mpes_leaf 2.0 and mpes_tool (a module and a script) into a new target.
struct Installed {
  fixtures::TempDir dir;
  std::string target;
  Installed(const std::string& uv_path, const std::string& links) {
    target = dir.path() + "/site";
    fs::create_directories(target);
    engine::deps::InstallerOptions options;
    options.uv_path = uv_path;
    options.index.offline = true;
    options.index.find_links = {links};
    const auto who = engine::deps::installer_identity(options);
    REQUIRE(::chown(target.c_str(), who.uid, who.gid) == 0);
    static const engine::Interpreter python = fixtures::probe_interpreter("/usr/bin/python3");
    engine::deps::InstallRequest request;
    request.interpreter = &python;
    request.requirements = {"mpes_leaf", "mpes_tool"};
    request.target = target;
    request.cache_dir = dir.path() + "/cache";
    const auto outcome = engine::deps::run_installer(options, request, {}, nullptr);
    INFO(outcome.error);
    REQUIRE(outcome.ok);
  }
};

const std::string& links() {
  static fixtures::TempDir dir;
  static const bool written = [] {
    fixtures::write_wheel(dir.path(), {"mpes_leaf", "2.0", {{"mpes_leaf/__init__.py", "VERSION = '2.0'\n"}}, {}, "", ""});
    fixtures::write_wheel(dir.path(), {"mpes_tool", "1.0",
                                       {{"mpes_tool.py", "def main():\n    print('tool')\n"},
                                        {"mpes_tool-1.0.data/scripts/mpes-tool", "#!python\nimport mpes_tool\nmpes_tool.main()\n"}},
                                       {}, "", ""});
    return true;
  }();
  (void)written;
  return dir.path();
}

std::vector<std::string> installers() {
  std::vector<std::string> out = {"/nonexistent/uv"};  // pip
  if (auto uv = sandbox::find_executable("uv")) out.push_back(*uv);
  return out;
}

}  // namespace

TEST_CASE("RECORD digests are urlsafe base64 without padding; fields are CSV", "[record]") {
  CHECK(record_digest("sha256", "") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK(record_digest("sha256", "abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  CHECK(record_digest("sha384", "abc") == "ywB1P0WjXou1oD1pmsZQBycsMqsO3tFjGotgWkP_W-2AhgcroefMI1i67KE0yCWn");
  CHECK(record_digest("sha512", "abc") ==
        "3a81oZNherrMQXNJriBBMRLm-k6JqX6iCp7u5ktV05ohkpkqJ0_BqDa6PCOj_uu9RU1EI2Q86A4qmslPpUyknw");
  CHECK(record_digest("md5", "abc").empty());
  CHECK(record_fields("a/b.py,sha256=x,12") == std::vector<std::string>{"a/b.py", "sha256=x", "12"});
  CHECK(record_fields("a/RECORD,,\r") == std::vector<std::string>{"a/RECORD", "", ""});
  CHECK(record_fields(R"("a,""b"".py",sha256=x,1)") == std::vector<std::string>{"a,\"b\".py", "sha256=x", "1"});
}

TEST_CASE("a fresh install matches its RECORD: scripts, bytecode and the installers' own files included",
          "[record]") {
  for (const auto& uv : installers()) {
    INFO("uv_path " << uv);
    Installed env(uv, links());
    REQUIRE(fs::exists(env.target + "/bin/mpes-tool"));  // pip lists it as ../../bin/mpes-tool
    REQUIRE(fs::exists(env.target + "/mpes_leaf/__pycache__"));
    const auto check = check_records(env.target);
    INFO(check.describe());
    CHECK(check.ok());
    CHECK(check.distributions == 2);
    CHECK(check.files >= 6);
  }
}

TEST_CASE("a changed, missing or extra file fails the check, naming the distribution and the file", "[record]") {
  for (const auto& uv : installers()) {
    INFO("uv_path " << uv);
    Installed env(uv, links());
    write(env.target + "/mpes_leaf/__init__.py", "VERSION = 'TAMPERED'\n");
    fs::remove(env.target + "/mpes_tool.py");
    write(env.target + "/mpes_planted.pth", "import os\n");
    write(env.target + "/mpes_leaf/__pycache__/planted.cpython-311.pyc", "x");  // bytecode of no listed source
    write(env.target + "/bin/mpes-tool", "#!/bin/sh\necho planted\n");
    const auto check = check_records(env.target);
    INFO(check.describe());
    CHECK_FALSE(check.ok());
    CHECK(mentions(check, "mpes_leaf-2.0.dist-info: mpes_leaf/__init__.py: its sha256 digest differs from RECORD's"));
    CHECK(mentions(check, "mpes_tool-1.0.dist-info: mpes_tool.py: missing"));
    CHECK(mentions(check, "mpes_tool-1.0.dist-info: ") );
    CHECK(mentions(check, "bin/mpes-tool: its sha256 digest differs"));
    CHECK(mentions(check, "mpes_planted.pth: listed by no RECORD"));
    CHECK(mentions(check, "mpes_leaf/__pycache__/planted.cpython-311.pyc: listed by no RECORD"));
    CHECK(check.problems.size() == 5);
    CHECK_THAT(check.describe(), Catch::StartsWith("the installed files do not match"));
  }
}

TEST_CASE("nothing in the target is followed or read but regular files", "[record]") {
  Installed env("/nonexistent/uv", links());
  const std::string leaf = env.target + "/mpes_leaf/__init__.py";
  // The same content behind a symlink is still refused; so is a FIFO (never opened to block).
  const std::string copy = env.target + "/../leaf-copy.py";
  fs::copy_file(leaf, copy);
  fs::remove(leaf);
  fs::create_symlink(copy, leaf);
  fs::remove(env.target + "/mpes_tool.py");
  REQUIRE(::mkfifo((env.target + "/mpes_tool.py").c_str(), 0644) == 0);
  // A RECORD behind a symlink is not read.
  const std::string record = env.target + "/mpes_leaf-2.0.dist-info/RECORD";
  fs::rename(record, env.target + "/../RECORD");
  fs::create_symlink(env.target + "/../RECORD", record);
  const auto check = check_records(env.target);
  INFO(check.describe());
  CHECK(mentions(check, "mpes_tool-1.0.dist-info: mpes_tool.py: not a regular file"));
  CHECK(mentions(check, "mpes_leaf-2.0.dist-info: RECORD: cannot open"));
  CHECK(mentions(check, "mpes_leaf/__init__.py: listed by no RECORD"));
}
