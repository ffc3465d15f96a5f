// How runs reach the network with --network on: a user-mode network per zygote only on the native
// backend, as root, with pasta found, and a namespace per run routed through it when nft is found
// too; every other case says what runs get instead, and the host network is never reported as
// isolated.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "engine/pool/zygote_process.h"

using engine::plan_run_network;
using sandbox::Backend;

const std::optional<std::string> kNft = "/usr/sbin/nft";

TEST_CASE("a user-mode network per zygote needs native, root and pasta; a namespace per run, nft", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto on = plan_run_network(Backend::native, true, true, pasta, kNft);
  CHECK(on.user_mode);
  CHECK(on.per_run);
  CHECK(on.pasta == "/usr/bin/pasta");
  CHECK(on.description.find("user-mode (pasta)") == 0);
  CHECK(on.description.find("each run and session in a network namespace of its own") != std::string::npos);
  CHECK(on.description.find("share") == std::string::npos);

  const auto shared = plan_run_network(Backend::native, true, true, pasta, std::nullopt);
  CHECK(shared.user_mode);
  CHECK_FALSE(shared.per_run);
  CHECK(shared.description.find("runs of one zygote share its namespace") != std::string::npos);
  CHECK(shared.description.find("apt install nftables") != std::string::npos);
}

TEST_CASE("without root or pasta the host network is said, with the reason", "[run_network]") {
  const auto unprivileged = plan_run_network(Backend::native, true, false, std::string("/usr/bin/pasta"), kNft);
  CHECK_FALSE(unprivileged.user_mode);
  CHECK_FALSE(unprivileged.per_run);
  CHECK(unprivileged.description.find("host network") == 0);
  CHECK(unprivileged.description.find("needs the server to run as root") != std::string::npos);

  const auto no_pasta = plan_run_network(Backend::native, true, true, std::nullopt, kNft);
  CHECK_FALSE(no_pasta.user_mode);
  CHECK(no_pasta.description.find("host network") == 0);
  CHECK(no_pasta.description.find("apt install passt") != std::string::npos);
}

TEST_CASE("--network off, docker and unsandboxed get no user-mode network", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto off = plan_run_network(Backend::native, false, true, pasta, kNft);
  CHECK_FALSE(off.user_mode);
  CHECK(off.description.find("off") == 0);
  const auto docker = plan_run_network(Backend::docker, true, true, pasta, kNft);
  CHECK_FALSE(docker.user_mode);
  CHECK(docker.description.find("docker") != std::string::npos);
  const auto none = plan_run_network(Backend::none, true, true, pasta, kNft);
  CHECK_FALSE(none.user_mode);
  CHECK(none.description.find("host network") == 0);
}
