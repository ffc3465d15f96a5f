#include "engine/pool/docker_zygote.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sandbox/mounts.h"
#include "sandbox/os_error.h"

namespace engine {

using sandbox::errno_text;

ControlListener listen_for_zygote(const std::string& runtime_dir) {
  ControlListener out;
  std::string tmpl = runtime_dir + "/zygote-XXXXXXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error(errno_text("mkdtemp in " + runtime_dir, errno));
  out.dir = tmpl;
  // Readable by the container's unprivileged uid, writable by the server alone.
  ::chmod(out.dir.c_str(), 0755);
  out.socket = out.dir + "/control";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (out.socket.size() >= sizeof address.sun_path) {
    remove_control(out);
    throw std::runtime_error("control socket path too long: " + out.socket);
  }
  std::memcpy(address.sun_path, out.socket.data(), out.socket.size());
  out.fd = sandbox::UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!out.fd || ::bind(out.fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(out.socket.c_str(), 0666) != 0 || ::listen(out.fd.get(), 1) != 0) {
    const int err = errno;
    remove_control(out);
    throw std::runtime_error(errno_text("control socket " + out.socket, err));
  }
  return out;
}

void remove_control(ControlListener& listener) {
  if (!listener.socket.empty()) ::unlink(listener.socket.c_str());
  if (!listener.dir.empty()) ::rmdir(listener.dir.c_str());
  listener.socket.clear();
  listener.dir.clear();
}

sandbox::DockerContainer zygote_container(const DockerZygote& docker, const sandbox::Policy& policy,
                                          const std::string& name, const std::string& zygote_path,
                                          const std::string& control_dir, const std::string& env_root,
                                          const std::string& env_inside,
                                          std::vector<std::string> zygote_command,
                                          std::vector<std::string> env) {
  sandbox::DockerContainer c;
  c.docker_path = docker.docker_path;
  c.image = docker.image;
  c.name = name;
  c.labels = {{sandbox::kDockerOwnerLabel, docker.owner}};
  c.seccomp_profile = docker.seccomp_profile;
  c.network = policy.network;
  const unsigned runs = docker.runs == 0 ? 1 : docker.runs;
  // Each run is bounded by its own cgroup (or rlimits); the container bounds them all together
  // with the zygote (a warm interpreter with preloads: up to about 512 MiB).
  c.memory_bytes = policy.limits.memory_bytes * runs + (512ull << 20);
  c.pids_limit = policy.limits.max_processes * runs + 64;
  c.binds.push_back({zygote_path, kDockerZygoteInside, true});
  c.binds.push_back({control_dir, kDockerControlInside, true});
  if (!env_root.empty()) c.binds.push_back({env_root, env_inside, true});
  const std::string tmpfs = sandbox::tmpfs_size_options(policy.limits.tmpfs_bytes);
  c.tmpfs.push_back({sandbox::kRunWorkDir, tmpfs + ",mode=0700,uid=" + std::to_string(c.uid) +
                                               ",gid=" + std::to_string(c.gid)});
  c.tmpfs.push_back({"/tmp", tmpfs + ",mode=1777"});
  c.env = std::move(env);
  c.command = std::move(zygote_command);
  return c;
}

}  // namespace engine
