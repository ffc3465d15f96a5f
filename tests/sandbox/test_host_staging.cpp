// Host staging: which paths an unprivileged bwrap needs staged, and how.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sandbox/host_staging.h"
#include "tests/support/wheel_fixtures.h"

TEST_CASE("staging: paths under private directories are bound back under a tmpfs", "[bwrap]") {
  // /root is private (0700); everything else is traversable.
  auto traversable = [](const std::string& dir) { return dir != "/root"; };
  const std::vector<std::string> paths = {"/work/build/zygote", "/root/.pyenv/versions/3.12.1",
                                          "/root/.pyenv/versions/3.12.1/lib", "/root/bin/zygote"};
  const std::vector<bool> dirs = {false, true, true, false};
  const auto plan = sandbox::plan_host_staging(paths, [&](std::size_t i) { return dirs[i]; }, traversable);
  CHECK(plan.hide_points == std::vector<std::string>{"/root"});
  // Parents first, each once; the directory paths themselves are mount points.
  CHECK(plan.dirs == std::vector<std::string>{"/root/.pyenv", "/root/.pyenv/versions",
                                             "/root/.pyenv/versions/3.12.1",
                                             "/root/.pyenv/versions/3.12.1/lib", "/root/bin"});
  CHECK(plan.files == std::vector<std::string>{"/root/bin/zygote"});
  CHECK(plan.bound == std::vector<std::size_t>{1, 2, 3});

  SECTION("nothing to stage when every path is reachable") {
    const auto none = sandbox::plan_host_staging({"/usr", "/work/x"}, [](std::size_t) { return true; },
                                                 [](const std::string&) { return true; });
    CHECK(none.empty());
    CHECK(none.bound.empty());
  }
  SECTION("a private directory inside another one is covered by the outer tmpfs") {
    auto nested = [](const std::string& dir) { return dir != "/home" && dir != "/home/u/private"; };
    const auto p = sandbox::plan_host_staging({"/home/u/private/py"}, [](std::size_t) { return true; }, nested);
    CHECK(p.hide_points == std::vector<std::string>{"/home"});
    CHECK(p.dirs == std::vector<std::string>{"/home/u", "/home/u/private", "/home/u/private/py"});
  }
}

TEST_CASE("staging: the plan names the paths it binds back", "[bwrap]") {
  auto traversable = [](const std::string& dir) { return dir != "/root"; };
  const std::vector<std::string> paths = {"/usr/lib/x", "/root/a", "/root/b/c"};
  const auto plan = sandbox::plan_host_staging(paths, [](std::size_t) { return true; }, traversable);
  CHECK(plan.bound == std::vector<std::size_t>{1, 2});
  CHECK(plan.bound_paths == std::vector<std::string>{"/root/a", "/root/b/c"});
}

TEST_CASE("staging from this host: a directory others cannot search is a hide point", "[bwrap]") {
  fixtures::TempDir dir;
  const std::string closed = dir.path() + "/closed";
  const std::string inside = closed + "/inside";
  const std::string file = closed + "/file";
  REQUIRE(::mkdir(closed.c_str(), 0700) == 0);
  REQUIRE(::mkdir(inside.c_str(), 0755) == 0);
  REQUIRE(::close(::creat(file.c_str(), 0644)) == 0);
  const auto plan = sandbox::plan_host_staging({dir.path(), inside, file});
  CHECK(plan.hide_points == std::vector<std::string>{closed});
  CHECK(plan.dirs == std::vector<std::string>{inside});
  CHECK(plan.files == std::vector<std::string>{file});
  CHECK(plan.bound_paths == std::vector<std::string>{inside, file});
  CHECK_THROWS_WITH(sandbox::plan_host_staging({dir.path() + "/missing"}), Catch::Contains("/missing"));
}
