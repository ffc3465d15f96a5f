#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <catch2/catch.hpp>

#include "mcp/open_file_limit.h"

using Catch::Matchers::Contains;

TEST_CASE("--max-connections must fit in the open-file limit beside the runs", "[open-file-limit]") {
  const rlim_t others = mcp::descriptors_besides_connections(4);
  CHECK(others > 4 * 8);  // each run in flight keeps several of the server's descriptors
  CHECK_FALSE(mcp::connections_fit(256, 4, 1024));
  CHECK_FALSE(mcp::connections_fit(65536, 64, RLIM_INFINITY));
  CHECK_FALSE(mcp::connections_fit(static_cast<unsigned>(1024 - others), 4, 1024));
  const auto over = mcp::connections_fit(static_cast<unsigned>(1024 - others + 1), 4, 1024);
  REQUIRE(over);
  CHECK_THAT(*over, Contains("--max-connections " + std::to_string(1024 - others + 1)));
  CHECK_THAT(*over, Contains("ulimit -Hn"));
  CHECK_THAT(*over, Contains("raise the limit to at least 1025"));
  CHECK_THAT(*over, Contains("give --max-connections " + std::to_string(1024 - others) + " or less"));
  // Below what the runs alone keep, only raising the limit helps.
  const auto tiny = mcp::connections_fit(1, 4, others);
  REQUIRE(tiny);
  CHECK_THAT(*tiny, !Contains("give --max-connections"));
}

TEST_CASE("the default --max-connections is lowered to fit; one given is refused", "[open-file-limit]") {
  const rlim_t others = mcp::descriptors_besides_connections(4);
  const auto fits = mcp::connection_bound(256, true, 4, 4096);
  CHECK(fits.max_connections == 256);
  CHECK(fits.warning.empty());
  CHECK(fits.error.empty());
  const auto lowered = mcp::connection_bound(256, false, 4, others + 100);
  CHECK(lowered.max_connections == 100);
  CHECK_THAT(lowered.warning, Contains("default --max-connections 256 lowered to 100"));
  CHECK(lowered.error.empty());
  const auto given = mcp::connection_bound(256, true, 4, others + 100);
  CHECK(given.max_connections == 0);
  CHECK_THAT(given.error, Contains("--max-connections 256 does not fit"));
  const auto no_room = mcp::connection_bound(256, false, 4, others + 15);
  CHECK_THAT(no_room.error, Contains("raise the limit"));
}

TEST_CASE("the soft open-file limit is raised to the hard one", "[open-file-limit]") {
  // In a child: the test process's own limit stays as it is.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_max < 64) ::_exit(2);
    const rlim_t hard = std::min<rlim_t>(limit.rlim_max, rlim_t{1} << 20);
    limit.rlim_cur = 32;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(3);
    const rlim_t raised = mcp::raise_open_file_limit();
    ::getrlimit(RLIMIT_NOFILE, &limit);
    ::_exit(raised == hard && limit.rlim_cur == hard ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
