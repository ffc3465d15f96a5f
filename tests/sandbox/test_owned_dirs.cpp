// Directories a server owns on the host: made with their owner, and those of gone owners
// removed by the next server, never another's.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/docker_command.h"
#include "sandbox/owned_dirs.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;

namespace {

// A directory as make_owned_dir makes it, with `owner` written as its owner instead.
std::string dir_owned_by(const std::string& base, const std::string& name, const std::string& owner) {
  const std::string dir = base + "/" + name;
  fs::create_directory(dir);
  std::ofstream(dir + "/.mpes-owner") << owner;
  std::ofstream(dir + "/left.txt") << "what a run left";
  return dir;
}

// The owner of a process that has exited (same boot, same namespace).
std::string gone_owner() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string me = sandbox::directory_owner();
  const auto colon = me.find(':');
  const auto space = me.find(' ');
  return me.substr(0, colon) + ":" + std::to_string(child) + ":1" + me.substr(space);
}

}  // namespace

TEST_CASE("owned dirs: made private, with this process as their owner", "[owned_dirs]") {
  const fixtures::TempDir base;
  const std::string dir = sandbox::make_owned_dir(base.path(), "mpes-x-");
  CHECK(fs::path(dir).parent_path() == base.path());
  CHECK(fs::path(dir).filename().string().rfind("mpes-x-", 0) == 0);
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  std::string owner;
  std::getline(std::ifstream(dir + "/.mpes-owner"), owner);
  CHECK(owner == sandbox::directory_owner());
  bool judged = false;
  CHECK(sandbox::directory_owner_alive(owner, judged));
  CHECK(judged);
  // Not made where it cannot be: the reason is said.
  CHECK_THROWS_WITH(sandbox::make_owned_dir(base.path() + "/missing", "mpes-x-"),
                    Catch::Contains("cannot create the directory") && Catch::Contains("missing"));
}

TEST_CASE("owned dirs: only those of gone owners of this namespace and uid are removed", "[owned_dirs]") {
  const fixtures::TempDir base;
  const std::string mine = sandbox::make_owned_dir(base.path(), "mpes-x-");
  const std::string gone = dir_owned_by(base.path(), "mpes-x-gone", gone_owner());
  // An owner of another boot is gone too.
  const std::string old_boot = dir_owned_by(base.path(), "mpes-x-oldboot",
                                            "another-boot:1:1 " + sandbox::directory_owner().substr(
                                                                      sandbox::directory_owner().find(' ') + 1));
  // Left alone: another pid namespace, no owner file, an owner not in this form, another prefix.
  const std::string other_ns = dir_owned_by(base.path(), "mpes-x-otherns", "another-boot:1:1 pid:[1]");
  const std::string no_owner = base.path() + "/mpes-x-noowner";
  fs::create_directory(no_owner);
  const std::string garbage = dir_owned_by(base.path(), "mpes-x-garbage", "garbage");
  const std::string other_prefix = dir_owned_by(base.path(), "mpes-y-gone", gone_owner());
  // A link to a gone owner's directory is not followed, nor removed as one.
  fs::create_directory_symlink(gone, base.path() + "/mpes-x-link");

  auto removed = sandbox::remove_dirs_of_gone_owners(base.path(), "mpes-x-");
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{gone, old_boot});
  CHECK_FALSE(fs::exists(gone));
  CHECK_FALSE(fs::exists(old_boot));
  for (const auto& kept : {mine, other_ns, no_owner, garbage, other_prefix}) {
    INFO(kept);
    CHECK(fs::exists(kept));
  }
  CHECK(fs::is_symlink(base.path() + "/mpes-x-link"));

  if (::geteuid() == 0) {
    // Another user's directory, whatever its owner says.
    const std::string theirs = dir_owned_by(base.path(), "mpes-x-theirs", gone_owner());
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK(sandbox::remove_dirs_of_gone_owners(base.path(), "mpes-x-").empty());
    CHECK(fs::exists(theirs));
  }
}
