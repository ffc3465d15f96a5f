// The one whole-file reader (sandbox/read_file.h): all of a file past one read's buffer, a missing
// file, the bound.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "sandbox/read_file.h"

TEST_CASE("read_file reads a file whole, refuses one past its bound, and says when there is none", "[sandbox]") {
  char path[] = "/tmp/mpes-read-file-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "line " + std::to_string(i) + "\n";  // ~88 KB: many reads
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);

  CHECK(sandbox::read_file(path) == text);
  CHECK(sandbox::read_file(path, text.size()) == text);
  CHECK_FALSE(sandbox::read_file(path, text.size() - 1).has_value());
  ::unlink(path);
  CHECK_FALSE(sandbox::read_file(path).has_value());
  // procfs files report no size: read until the end all the same.
  const auto maps = sandbox::read_file("/proc/self/maps");
  REQUIRE(maps.has_value());
  CHECK(maps->find("[stack]") != std::string::npos);
}
