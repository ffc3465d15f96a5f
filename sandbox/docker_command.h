// The docker (or podman) command lines of the docker backend: the long-lived container a zygote
// runs in, and the commands that find and remove the server's containers. The container is the
// outer wall: read-only root, no capabilities, no new privileges, the given seccomp profile,
// --pids-limit, --memory, the network given, an unprivileged uid, host paths read-only.
// Pure: builds argv from a description; the caller spawns (sandbox/process.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sandbox {

// The label every container of the server carries; its value names the owning server
// (see docker_owner()).
inline constexpr const char* kDockerOwnerLabel = "io.github.mcp-python-exec-sandbox.owner";

struct DockerBind {
  std::string source;  // host path
  std::string dest;    // path in the container
  bool read_only = true;
};

struct DockerContainer {
  std::string docker_path = "docker";
  std::string image;
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string seccomp_profile;  // host path of the profile's JSON ("" = the engine's default: refused here)
  bool network = true;          // false: --network none
  std::uint64_t memory_bytes = 0;   // 0 = unlimited
  std::uint32_t pids_limit = 0;     // 0 = unlimited
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::string hostname = "sandbox";
  std::vector<DockerBind> binds;
  // tmpfs mounts: path and options (e.g. "size=...,mode=0700,uid=65534").
  std::vector<std::pair<std::string, std::string>> tmpfs;
  std::vector<std::string> env;      // "K=V"
  std::vector<std::string> command;  // the program in the container, then its arguments
};

// argv of `docker run` in the foreground (the client stays attached: the container's stdout
// and stderr are its own; --rm removes the container once it ends).
std::vector<std::string> build_docker_run_argv(const DockerContainer& container);

// The owner label's value for this server process: "<boot id>:<pid>:<start time>", unique for
// as long as the process lives; docker_owner_alive() tells whether such an owner still runs.
std::string docker_owner();
bool docker_owner_alive(const std::string& owner);

// argv listing every container (running or not) labelled by any server: one "ID OWNER" a line.
std::vector<std::string> docker_list_owned_argv(const std::string& docker_path);
// argv removing containers by id or name (forcefully: running ones are killed).
std::vector<std::string> docker_remove_argv(const std::string& docker_path, const std::vector<std::string>& ids);

}  // namespace sandbox
