// The one way content is handed to a sandboxed process as a file: exactly the data, read from
// offset 0, and sealed so that nobody holding the fd can change it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandbox/memfd.h"

TEST_CASE("sealed_memfd holds exactly the data, from offset 0, and refuses changes", "[memfd]") {
  const std::string data = "root:x:0:0::/:/bin/sh\n" + std::string(100000, 'x');
  sandbox::UniqueFd fd = sandbox::sealed_memfd("test", data);
  REQUIRE(fd);
  CHECK((::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
  std::string read_back(data.size() + 10, '\0');
  std::size_t got = 0;
  for (ssize_t n; (n = ::read(fd.get(), read_back.data() + got, read_back.size() - got)) > 0;) got += static_cast<std::size_t>(n);
  read_back.resize(got);
  CHECK(read_back == data);
  CHECK(::pwrite(fd.get(), "y", 1, 0) == -1);
  CHECK(errno == EPERM);
  CHECK(::ftruncate(fd.get(), 1) == -1);
}

TEST_CASE("sealed_memfd of nothing is an empty sealed file", "[memfd]") {
  sandbox::UniqueFd fd = sandbox::sealed_memfd("empty", "");
  char c = 0;
  CHECK(::read(fd.get(), &c, 1) == 0);
  CHECK(::write(fd.get(), "y", 1) == -1);
}
