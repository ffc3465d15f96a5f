// The docker backend's side of one zygote: the container it runs in (sandbox/docker_command.h)
// and the control socket it connects to. A container cannot inherit an fd, so the server listens
// on a SOCK_SEQPACKET socket in a directory of its own (random name under the backend's private
// runtime directory, DockerRuntime), mounted read-only into that container alone; the zygote
// connects (--connect), the server accepts once, then unlinks the socket and closes the
// listener, so nothing else can ever connect. From then on the protocol is the native one: fds
// by SCM_RIGHTS cross the container's boundary (one kernel).
#pragma once

#include <string>
#include <vector>

#include "sandbox/docker_command.h"
#include "sandbox/policy.h"
#include "sandbox/unique_fd.h"

namespace engine {

// Where things are inside a zygote's container.
inline constexpr const char* kDockerZygoteInside = "/run/mpes/zygote";
inline constexpr const char* kDockerControlInside = "/run/mpes/control";
inline constexpr const char* kDockerControlSocket = "/run/mpes/control/control";

// What the docker backend adds to a zygote's launch.
struct DockerZygote {
  std::string docker_path;      // docker or podman
  std::string image;
  std::string seccomp_profile;  // host path of profiles/docker_seccomp.json, written out
  std::string runtime_dir;      // DockerRuntime::path()
  std::string owner;            // sandbox::docker_owner(): the label every container carries
  unsigned runs = 1;            // runs at once in the container (its memory and pids bounds)
};

// The listening end of one zygote's control socket.
struct ControlListener {
  sandbox::UniqueFd fd;  // non-blocking, close-on-exec
  std::string dir;       // host directory mounted at kDockerControlInside
  std::string socket;    // dir + "/control"
};

// A fresh directory under `runtime_dir` and a socket listening in it. Throws with the reason.
ControlListener listen_for_zygote(const std::string& runtime_dir);
// Unlinks the socket and removes its directory (idempotent).
void remove_control(ControlListener& listener);

// The container of one zygote: the zygote binary, the control directory and the environment
// (when given) read-only; tmpfs for the zygote's home (the runs' work dir) and /tmp; the policy's
// network; memory and pids bounds for `runs` runs of the policy's limits plus the zygote.
sandbox::DockerContainer zygote_container(const DockerZygote& docker, const sandbox::Policy& policy,
                                          const std::string& name, const std::string& zygote_path,
                                          const std::string& control_dir, const std::string& env_root,
                                          const std::string& env_inside,
                                          std::vector<std::string> zygote_command,
                                          std::vector<std::string> env);

}  // namespace engine
