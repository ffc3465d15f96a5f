#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/interpreters/probe_cache.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/mpes-cache-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("a cached probe comes back while the interpreter is unchanged", "[interpreter-cache]") {
  TempDir dir;
  write(dir.path / "python3.11", "#!/bin/sh\n");
  write(dir.path / "libpython3.11.so.1.0", "ELF");
  engine::Interpreter in;
  in.version = "3.11.2";
  in.major_minor = "3.11";
  in.executable = (dir.path / "python3.11").string();
  in.prefix = in.base_prefix = dir.path.string();
  in.libpython = (dir.path / "libpython3.11.so.1.0").string();
  in.sys_path = {"/usr/lib/python311.zip", "/usr/lib/python3.11"};
  in.site_packages = {"/usr/lib/python3/dist-packages"};
  in.source = "/usr/bin";
  in.markers.python_version = "3.11";
  in.markers.platform_release = "6.1";
  const std::string file = (dir.path / "cache" / "interpreters.json").string();

  engine::store_cached_interpreter(file, "/usr/bin/python3", in);
  auto got = engine::load_cached_interpreter(file, "/usr/bin/python3");
  REQUIRE(got);
  CHECK(got->version == "3.11.2");
  CHECK(got->executable == in.executable);
  CHECK(got->libpython == in.libpython);
  CHECK(got->sys_path == in.sys_path);
  CHECK(got->site_packages == in.site_packages);
  CHECK(got->markers.platform_release == "6.1");

  SECTION("another candidate is not answered from it") {
    CHECK_FALSE(engine::load_cached_interpreter(file, "/usr/bin/python3.12"));
  }
  SECTION("a changed executable invalidates it") {
    write(dir.path / "python3.11", "#!/bin/sh\n# upgraded\n");
    CHECK_FALSE(engine::load_cached_interpreter(file, "/usr/bin/python3"));
  }
  SECTION("a replaced libpython invalidates it") {
    fs::remove(dir.path / "libpython3.11.so.1.0");
    write(dir.path / "libpython3.11.so.1.0", "ELF");  // new inode
    CHECK_FALSE(engine::load_cached_interpreter(file, "/usr/bin/python3"));
  }
  SECTION("a damaged file is a miss, not an error") {
    write(file, "{\"format\": 1, \"entries\": [ {\"candidate\": ");
    CHECK_FALSE(engine::load_cached_interpreter(file, "/usr/bin/python3"));
  }
}

TEST_CASE("no cache file is a miss", "[interpreter-cache]") {
  CHECK_FALSE(engine::load_cached_interpreter("/nonexistent/mpes/interpreters.json", "/usr/bin/python3"));
}
