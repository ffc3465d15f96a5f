// grow_pipe: a pipe's capacity only ever grows, and what is not a pipe is left alone.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "sandbox/memfd.h"
#include "sandbox/pipe_capacity.h"
#include "sandbox/unique_fd.h"

TEST_CASE("grow_pipe grows a pipe and never shrinks it", "[pipe_capacity]") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const sandbox::UniqueFd read_end(p[0]), write_end(p[1]);
  REQUIRE(::fcntl(write_end.get(), F_SETPIPE_SZ, 256 * 1024) == 256 * 1024);
  CHECK(sandbox::grow_pipe(write_end.get(), 128 * 1024) == 256 * 1024);
  CHECK(::fcntl(read_end.get(), F_GETPIPE_SZ) == 256 * 1024);
  // Either end names the same pipe.
  CHECK(sandbox::grow_pipe(read_end.get(), 512 * 1024) == 512 * 1024);
  CHECK(::fcntl(write_end.get(), F_GETPIPE_SZ) == 512 * 1024);
  // Rounded up to a power of two pages, as the kernel does.
  CHECK(sandbox::grow_pipe(write_end.get(), 600 * 1024) == 1024 * 1024);
}

TEST_CASE("grow_pipe on what is not a pipe answers -1 and changes nothing", "[pipe_capacity]") {
  const sandbox::UniqueFd file = sandbox::sealed_memfd("not-a-pipe", "data");
  CHECK(sandbox::grow_pipe(file.get(), 1 << 20) == -1);
}
