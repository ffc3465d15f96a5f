// Errors from the OS said so that a user can act on them: running out of descriptors names the
// limit and how to raise it.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/os_error.h"

TEST_CASE("an OS error says what it is, and out of descriptors which limit to raise", "[os_error]") {
  CHECK(sandbox::errno_text(ENOENT) == std::strerror(ENOENT));
  CHECK(sandbox::errno_text("open x", EACCES) == std::string("open x: ") + std::strerror(EACCES));
  const std::string emfile = sandbox::errno_text("pipe", EMFILE);
  CHECK(emfile.starts_with(std::string("pipe: ") + std::strerror(EMFILE)));
  CHECK(emfile.find("raise ulimit -n") != std::string::npos);
  CHECK(sandbox::errno_text(ENFILE).find("fs.file-max") != std::string::npos);
}
