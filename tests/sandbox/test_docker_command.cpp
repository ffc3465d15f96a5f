#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/pool/docker_host.h"
#include "engine/pool/docker_zygote.h"
#include "engine/pool/zygote_process.h"
#include "profiles/mpes_profiles.h"
#include "sandbox/docker_command.h"

using Argv = std::vector<std::string>;

namespace {

// The value following `flag` (every occurrence).
Argv values_of(const Argv& argv, const std::string& flag) {
  Argv out;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  }
  return out;
}

bool has(const Argv& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

sandbox::DockerContainer sample() {
  sandbox::DockerContainer c;
  c.docker_path = "/usr/bin/docker";
  c.image = "img:tag";
  c.name = "mpes-1-1";
  c.labels = {{sandbox::kDockerOwnerLabel, "boot:1:2"}};
  c.seccomp_profile = "/run/x/seccomp.json";
  c.memory_bytes = 1 << 30;
  c.pids_limit = 200;
  c.binds = {{"/host/zygote", "/run/mpes/zygote", true}};
  c.tmpfs = {{"/tmp", "size=1024"}};
  c.env = {"A=1"};
  c.command = {"/run/mpes/zygote", "--home", "/usr"};
  return c;
}

}  // namespace

TEST_CASE("the zygote's container is walled: read-only, no capabilities, the profile, bounds") {
  const Argv argv = sandbox::build_docker_run_argv(sample());
  REQUIRE(argv.size() > 4);
  CHECK(argv[0] == "/usr/bin/docker");
  CHECK(argv[1] == "run");
  CHECK(has(argv, "--rm"));
  CHECK(has(argv, "--read-only"));
  CHECK(values_of(argv, "--cap-drop") == Argv{"ALL"});
  const Argv security = values_of(argv, "--security-opt");
  CHECK(has(security, "no-new-privileges"));
  CHECK(has(security, "seccomp=/run/x/seccomp.json"));
  CHECK(values_of(argv, "--user") == Argv{"65534:65534"});
  CHECK(values_of(argv, "--memory") == Argv{std::to_string(1 << 30)});
  CHECK(values_of(argv, "--memory-swap") == Argv{std::to_string(1 << 30)});
  CHECK(values_of(argv, "--pids-limit") == Argv{"200"});
  CHECK(values_of(argv, "--network") == Argv{"bridge"});
  CHECK(values_of(argv, "--label") == Argv{std::string(sandbox::kDockerOwnerLabel) + "=boot:1:2"});
  CHECK(values_of(argv, "--mount") == Argv{"type=bind,source=/host/zygote,target=/run/mpes/zygote,readonly"});
  CHECK(values_of(argv, "--tmpfs") == Argv{"/tmp:size=1024"});
  CHECK_FALSE(has(argv, "--privileged"));
  // The image, then the command's arguments (its program is the entrypoint).
  CHECK(values_of(argv, "--entrypoint") == Argv{"/run/mpes/zygote"});
  const auto image = std::find(argv.begin(), argv.end(), "img:tag");
  REQUIRE(image != argv.end());
  CHECK(Argv(image + 1, argv.end()) == Argv{"--home", "/usr"});
}

TEST_CASE("--network off gives the container no network") {
  auto c = sample();
  c.network = false;
  CHECK(values_of(sandbox::build_docker_run_argv(c), "--network") == Argv{"none"});
}

TEST_CASE("a container without a command keeps the image's arguments after it") {
  auto c = sample();
  c.command.clear();
  const Argv argv = sandbox::build_docker_run_argv(c);
  CHECK(values_of(argv, "--entrypoint") == Argv{""});
  CHECK(argv.back() == "img:tag");
}

TEST_CASE("the owner label names this live process, and a dead one is told apart") {
  const std::string me = sandbox::docker_owner();
  CHECK(sandbox::docker_owner_alive(me));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  // The same boot, a pid that is gone.
  const std::string boot = me.substr(0, me.find(':'));
  CHECK_FALSE(sandbox::docker_owner_alive(boot + ":" + std::to_string(child) + ":1"));
  // This pid, another start time (a reused pid): not the owner.
  CHECK_FALSE(sandbox::docker_owner_alive(boot + ":" + std::to_string(::getpid()) + ":1"));
  CHECK_FALSE(sandbox::docker_owner_alive("another-boot:" + std::to_string(::getpid()) + ":1"));
  CHECK_FALSE(sandbox::docker_owner_alive("garbage"));
}

TEST_CASE("leftovers are listed by label and removed by force") {
  const Argv list = sandbox::docker_list_owned_argv("docker");
  CHECK(has(list, "--all"));
  CHECK(has(values_of(list, "--filter"), std::string("label=") + sandbox::kDockerOwnerLabel));
  CHECK(sandbox::docker_remove_argv("docker", {"a", "b"}) == Argv{"docker", "rm", "--force", "a", "b"});
}

TEST_CASE("a zygote's container: its files read-only, bounds for its runs, the zygote connecting") {
  engine::ZygoteLaunch launch;
  launch.interpreter.version = "3.11.2";
  launch.interpreter.major_minor = "3.11";
  launch.interpreter.executable = "/usr/bin/python3.11";
  launch.interpreter.prefix = launch.interpreter.base_prefix = "/usr";
  launch.interpreter.libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
  launch.policy.backend = sandbox::Backend::docker;
  launch.policy.network = false;
  launch.policy.limits.memory_bytes = 256ull << 20;
  launch.policy.limits.max_processes = 32;
  launch.zygote_path = "/opt/build/mcp-python-exec-sandbox-zygote";
  launch.env_root = "/cache/envs/abc";
  launch.docker = {"docker", "mcp-python-exec-sandbox:bookworm", "/run/p/seccomp.json", "/run/p", "owner", 3};
  const Argv argv = engine::describe_zygote_command(launch).argv;
  // docker's --network, then the zygote's own.
  CHECK(values_of(argv, "--network") == Argv{"none", "off"});
  CHECK(values_of(argv, "--memory") == Argv{std::to_string((256ull << 20) * 3 + (512ull << 20))});
  CHECK(values_of(argv, "--pids-limit") == Argv{std::to_string(32 * 3 + 64)});
  const Argv mounts = values_of(argv, "--mount");
  CHECK(mounts.size() == 3);
  for (const auto& m : mounts) CHECK(m.size() > 9);
  for (const auto& m : mounts) CHECK(m.substr(m.size() - 9) == ",readonly");
  CHECK(has(mounts, "type=bind,source=/opt/build/mcp-python-exec-sandbox-zygote,target=/run/mpes/zygote,readonly"));
  CHECK(has(mounts, "type=bind,source=/cache/envs/abc,target=/run/mpes/env,readonly"));
  CHECK(values_of(argv, "--connect") == Argv{engine::kDockerControlSocket});
  CHECK(values_of(argv, "--backend") == Argv{"docker"});
  // The environment's site dir is where the container sees it.
  const Argv sys_path = values_of(argv, "--sys-path");
  REQUIRE(sys_path.size() == 1);
  CHECK(sys_path[0].rfind("/run/mpes/env/site", 0) == 0);
}

TEST_CASE("the control socket: one directory per zygote, removed with it") {
  char tmpl[] = "/tmp/mpes-test-docker-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  auto listener = engine::listen_for_zygote(tmpl);
  CHECK(listener.fd);
  CHECK(::access(listener.socket.c_str(), F_OK) == 0);
  CHECK(listener.socket == listener.dir + "/control");
  const std::string dir = listener.dir;
  engine::remove_control(listener);
  CHECK(::access(dir.c_str(), F_OK) != 0);
  CHECK(::rmdir(tmpl) == 0);
}

TEST_CASE("a one-shot container: host paths mounted under /run/mpes/mount and rewritten everywhere") {
  const Argv argv = engine::docker_oneshot_argv(
      "docker", "img:1", "/p/seccomp.json", "owner",
      {"/usr/bin/python3", "-m", "pip", "install", "--target", "/root/.cache/m/envs/x/site", "--cache-dir",
       "/root/.cache/m/pip", "{\"paths\": [\"/root/.cache/m/envs/x/site\"]}", "/root/.cache/m/pipx"},
      {"SSL_CERT_FILE=/etc/ssl/ca.crt", "HOME=/tmp"},
      {{"/root/.cache/m/envs/x/site", true}, {"/root/.cache/m/pip", true}, {"/etc/ssl/ca.crt", false}},
      true, 65534, 65534);
  const Argv mounts = values_of(argv, "--mount");
  REQUIRE(mounts.size() == 3);
  CHECK(has(mounts, "type=bind,source=/root/.cache/m/envs/x/site,target=/run/mpes/mount/0"));
  CHECK(has(mounts, "type=bind,source=/root/.cache/m/pip,target=/run/mpes/mount/1"));
  CHECK(has(mounts, "type=bind,source=/etc/ssl/ca.crt,target=/run/mpes/mount/2,readonly"));
  const auto image = std::find(argv.begin(), argv.end(), "img:1");
  REQUIRE(image != argv.end());
  CHECK(Argv(image + 1, argv.end()) ==
        Argv{"-m", "pip", "install", "--target", "/run/mpes/mount/0", "--cache-dir", "/run/mpes/mount/1",
             "{\"paths\": [\"/run/mpes/mount/0\"]}", "/root/.cache/m/pipx"});
  CHECK(values_of(argv, "--env") == Argv{"SSL_CERT_FILE=/run/mpes/mount/2", "HOME=/tmp"});
  CHECK(values_of(argv, "--network") == Argv{"bridge"});
  CHECK(values_of(argv, "--user") == Argv{"65534:65534"});
  CHECK(has(values_of(argv, "--tmpfs"), "/tmp:size=1073741824,mode=1777"));
}

TEST_CASE("the container's seccomp profile lets each run scope itself with Landlock") {
  // Runs make themselves Landlock domains (sandbox/landlock.h); docker's default profile allows
  // the landlock calls unconditionally, and so must ours (they only restrict).
  const auto profile = nlohmann::json::parse(profiles::docker_seccomp());
  REQUIRE(profile.at("defaultAction") == "SCMP_ACT_ERRNO");
  for (const char* call : {"landlock_create_ruleset", "landlock_restrict_self"}) {
    INFO(call);
    bool allowed = false;
    for (const auto& rule : profile.at("syscalls")) {
      if (rule.at("action") != "SCMP_ACT_ALLOW" || rule.contains("args") || rule.contains("includes") ||
          rule.contains("excludes")) {
        continue;
      }
      const auto& names = rule.at("names");
      allowed = allowed || std::find(names.begin(), names.end(), call) != names.end();
    }
    CHECK(allowed);
  }
}
