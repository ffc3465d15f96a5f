// How runs reach the network with --network on: a user-mode network per zygote only on the native
// backend, with pasta found, as root or where /dev/net/tun is open to the server's user, and a namespace per run routed through it when nft is found
// too; every other case says what runs get instead, and the host network is never reported as
// isolated.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "engine/pool/zygote_process.h"
#include "sandbox/user_network.h"

using engine::plan_run_network;
using sandbox::Backend;

const std::optional<std::string> kNft = "/usr/sbin/nft";

TEST_CASE("a user-mode network per zygote needs native, pasta, and root or an open tun device; a namespace per run, nft", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto on = plan_run_network(Backend::native, true, "", pasta, kNft);
  CHECK(on.user_mode);
  CHECK(on.per_run);
  CHECK(on.pasta == "/usr/bin/pasta");
  CHECK(on.description.find("user-mode (pasta)") == 0);
  CHECK(on.description.find("each run and session in a network namespace of its own") != std::string::npos);
  CHECK(on.description.find("share") == std::string::npos);

  const auto shared = plan_run_network(Backend::native, true, "", pasta, std::nullopt);
  CHECK(shared.user_mode);
  CHECK_FALSE(shared.per_run);
  CHECK(shared.description.find("runs of one zygote share its namespace") != std::string::npos);
  CHECK(shared.description.find("apt install nftables") != std::string::npos);
}

TEST_CASE("without pasta, or without root and an open tun device, the host network is said, with the reason", "[run_network]") {
  const auto unprivileged = plan_run_network(Backend::native, true, sandbox::UserNetwork::unavailable_reason_for(false, false, "/dev/net/tun is mode 0600, owner uid 0"), std::string("/usr/bin/pasta"), kNft);
  CHECK_FALSE(unprivileged.user_mode);
  CHECK_FALSE(unprivileged.per_run);
  CHECK(unprivileged.description.find("host network") == 0);
  CHECK(unprivileged.description.find("needs the server to run as root, or /dev/net/tun open to its user") !=
        std::string::npos);
  CHECK(unprivileged.description.find("mode 0600, owner uid 0") != std::string::npos);
  // Root, or a tun device the user may open: nothing stands in the way.
  CHECK(sandbox::UserNetwork::unavailable_reason_for(true, false, "x").empty());
  CHECK(sandbox::UserNetwork::unavailable_reason_for(false, true, "x").empty());

  const auto no_pasta = plan_run_network(Backend::native, true, "", std::nullopt, kNft);
  CHECK_FALSE(no_pasta.user_mode);
  CHECK(no_pasta.description.find("host network") == 0);
  CHECK(no_pasta.description.find("apt install passt") != std::string::npos);
}

TEST_CASE("--network off, docker and unsandboxed get no user-mode network", "[run_network]") {
  const std::optional<std::string> pasta = "/usr/bin/pasta";
  const auto off = plan_run_network(Backend::native, false, "", pasta, kNft);
  CHECK_FALSE(off.user_mode);
  CHECK(off.description.find("off") == 0);
  const auto docker = plan_run_network(Backend::docker, true, "", pasta, kNft);
  CHECK_FALSE(docker.user_mode);
  CHECK(docker.description.find("docker") != std::string::npos);
  const auto none = plan_run_network(Backend::none, true, "", pasta, kNft);
  CHECK_FALSE(none.user_mode);
  CHECK(none.description.find("host network") == 0);
}
