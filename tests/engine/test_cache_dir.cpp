// The one cache-directory resolution (environments, installer downloads, the interpreter probe).
#include <catch2/catch.hpp>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/cache_dir.h"
#include "tests/support/scoped_env.h"
#include "tests/support/wheel_fixtures.h"

using test_support::ScopedEnv;

TEST_CASE("cache_dir: the configuration, then XDG_CACHE_HOME, then HOME", "[cache-dir]") {
  CHECK(engine::cache_dir("/srv/cache") == "/srv/cache");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/tmp/xdg");
    CHECK(engine::cache_dir() == "/var/tmp/xdg/mcp-python-exec-sandbox");
    CHECK(engine::cache_dir("/srv/cache") == "/srv/cache");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/someone");
    CHECK(engine::cache_dir() == "/home/someone/.cache/mcp-python-exec-sandbox");
  }
  // Relative values do not count (they would depend on the server's working directory).
  ScopedEnv relative_xdg("XDG_CACHE_HOME", "cache");
  ScopedEnv home("HOME", "/home/someone");
  CHECK(engine::cache_dir() == "/home/someone/.cache/mcp-python-exec-sandbox");
}

TEST_CASE("cache_dir: without HOME, the account's home directory", "[cache-dir]") {
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", nullptr);
  const passwd* account = ::getpwuid(::geteuid());
  if (account == nullptr || account->pw_dir == nullptr || account->pw_dir[0] != '/') {
    WARN("SKIPPED: this uid has no home directory in the account database");
    return;
  }
  CHECK(engine::cache_dir() == std::string(account->pw_dir) + "/.cache/mcp-python-exec-sandbox");
}

TEST_CASE("claim_private_dir takes only a directory no one else can reach", "[cache-dir]") {
  fixtures::TempDir dir;
  const std::string fresh = dir.path() + "/fresh";
  REQUIRE(engine::claim_private_dir(fresh));
  struct stat st {};
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(engine::claim_private_dir(fresh));  // again: it is ours

  // Left open to others (as another user's squatted directory would be): refused.
  const std::string open_dir = dir.path() + "/open";
  REQUIRE(::mkdir(open_dir.c_str(), 0700) == 0);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  CHECK_FALSE(engine::claim_private_dir(open_dir));

  // A symlink to a private directory of ours is still refused (it could be swapped).
  const std::string link = dir.path() + "/link";
  REQUIRE(::symlink(fresh.c_str(), link.c_str()) == 0);
  CHECK_FALSE(engine::claim_private_dir(link));

  // Owned by someone else.
  if (::geteuid() == 0) {
    const std::string theirs = dir.path() + "/theirs";
    REQUIRE(::mkdir(theirs.c_str(), 0700) == 0);
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(engine::claim_private_dir(theirs));
  }
}
