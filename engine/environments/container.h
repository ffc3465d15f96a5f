// Where the installer and the requirement check run with the docker backend: in a container of
// the image whose interpreter runs the scripts (the host's interpreter at the same path may be
// another, or missing). The engine supplies the wrap (engine/pool/docker_host.h); empty = on the
// host, as for the other backends.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace engine {

struct ContainerMount {
  std::string path;       // host path, mounted at the same path in the container
  bool writable = false;
};

// The argv that runs `command` in such a container with exactly the environment `env` ("K=V"):
// `mounts` at their own paths, a fresh /tmp, the network (the installer's) or none (the check),
// as uid:gid.
using ContainerWrap = std::function<std::vector<std::string>(
    const std::vector<std::string>& command, const std::vector<std::string>& env,
    const std::vector<ContainerMount>& mounts, bool network, uid_t uid, gid_t gid)>;

}  // namespace engine
