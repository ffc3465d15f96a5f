// How runs reach the network with --network on: a user-mode network per zygote only on the native
// backend, as root, with pasta found; every other case says what runs get instead, and the host
// network is never reported as isolated.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "engine/pool/zygote_process.h"

using engine::plan_run_network;
using sandbox::Backend;

TEST_CASE("a user-mode network per zygote needs native, root and pasta", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto on = plan_run_network(Backend::native, true, true, pasta);
  CHECK(on.user_mode);
  CHECK(on.pasta == "/usr/bin/pasta");
  CHECK(on.description.find("user-mode (pasta)") == 0);
  CHECK(on.description.find("runs of one zygote share") != std::string::npos);
}

TEST_CASE("without root or pasta the host network is said, with the reason", "[run_network]") {
  const auto unprivileged = plan_run_network(Backend::native, true, false, std::string("/usr/bin/pasta"));
  CHECK_FALSE(unprivileged.user_mode);
  CHECK(unprivileged.description.find("host network") == 0);
  CHECK(unprivileged.description.find("needs the server to run as root") != std::string::npos);

  const auto no_pasta = plan_run_network(Backend::native, true, true, std::nullopt);
  CHECK_FALSE(no_pasta.user_mode);
  CHECK(no_pasta.description.find("host network") == 0);
  CHECK(no_pasta.description.find("apt install passt") != std::string::npos);
}

TEST_CASE("--network off, docker and unsandboxed get no user-mode network", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto off = plan_run_network(Backend::native, false, true, pasta);
  CHECK_FALSE(off.user_mode);
  CHECK(off.description.find("off") == 0);
  const auto docker = plan_run_network(Backend::docker, true, true, pasta);
  CHECK_FALSE(docker.user_mode);
  CHECK(docker.description.find("docker") != std::string::npos);
  const auto none = plan_run_network(Backend::none, true, true, pasta);
  CHECK_FALSE(none.user_mode);
  CHECK(none.description.find("host network") == 0);
}
