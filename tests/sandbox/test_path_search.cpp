// Finding programs: PATH read as a POSIX shell reads it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sandbox/path_search.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;

TEST_CASE("find_executable reads PATH as POSIX does: an empty entry is the current directory",
          "[path-search]") {
  fixtures::TempDir dir;
  const fs::path bin = fs::path(dir.path()) / "bin";
  fs::create_directories(bin / "tool-dir");  // a directory of that name is not a program
  std::ofstream(bin / "mpes-tool") << "#!/bin/sh\n";
  fs::permissions(bin / "mpes-tool", fs::perms(0755));
  std::ofstream(bin / "mpes-plain") << "not executable\n";
  const std::string dirs = "/nonexistent:" + bin.string();
  CHECK(sandbox::find_executable("mpes-tool", dirs) == (bin / "mpes-tool").string());
  CHECK_FALSE(sandbox::find_executable("mpes-plain", dirs));
  CHECK_FALSE(sandbox::find_executable("tool-dir", dirs));
  CHECK_FALSE(sandbox::find_executable("mpes-tool", "/nonexistent"));
  CHECK(sandbox::find_executable("sh", "/bin") == "/bin/sh");
  CHECK(sandbox::find_executable("/bin/sh", "") == "/bin/sh");

  const fs::path old = fs::current_path();
  fs::current_path(bin);
  // Empty entries (leading, trailing, doubled, or the whole value) and relative ones are the
  // current directory; the answer is absolute.
  CHECK(sandbox::find_executable("mpes-tool", ":/nonexistent") == (bin / "mpes-tool").string());
  CHECK(sandbox::find_executable("mpes-tool", "/nonexistent:") == (bin / "mpes-tool").string());
  CHECK(sandbox::find_executable("mpes-tool", "/nonexistent::/x") == (bin / "mpes-tool").string());
  CHECK(sandbox::find_executable("mpes-tool", "") == (bin / "mpes-tool").string());
  CHECK(sandbox::find_executable("mpes-tool", ".") == (bin / "mpes-tool").string());
  CHECK(sandbox::find_executable("./mpes-tool", "/nonexistent") == (bin / "mpes-tool").string());
  CHECK(sandbox::path_directories("/a::b") ==
        std::vector<std::string>{"/a", bin.string(), (bin / "b").string()});
  fs::current_path(old);
}
