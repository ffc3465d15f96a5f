// The docker backend's host side, beyond one zygote: is the client there, does the daemon
// answer, is the image present, what interpreter it holds (probed in a container like the
// zygote's), which containers a crashed server left; and the backend's private runtime
// directory (the seccomp profile written out for `docker run`, the zygotes' control sockets).
// The checks block (they run docker): call them on a worker thread.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "engine/interpreters/interpreter.h"

namespace engine {

// The image scripts/build-image.sh builds (and --docker-image's default).
inline constexpr const char* kDefaultDockerImage = "mcp-python-exec-sandbox:bookworm";
// The interpreter of the image that runs scripts.
inline constexpr const char* kDockerPython = "/usr/bin/python3";

struct DockerStatus {
  std::string docker_path;     // as found on PATH ("" when missing)
  std::string server_version;  // the daemon's
  std::string image_id;
  std::optional<Interpreter> interpreter;  // the image's python3
  std::vector<std::string> leftovers_removed;  // containers of servers that are gone
  std::string problem;  // "" when runs can start
  std::string fix;      // the exact fix
  bool ready() const { return problem.empty(); }
  // "docker 20.10.24, image NAME (sha256:...), Python 3.11.2" or the problem and its fix.
  std::string describe(const std::string& image) const;
};

// Checks the client, the daemon and the image, removes the containers of servers that are
// gone, and probes the image's interpreter (a container with the zygote's seccomp profile).
DockerStatus check_docker(const std::string& docker_path, const std::string& image,
                          const std::string& seccomp_profile);

// Removes every container whose owner label is `owner` (the server's own, at exit); blocking.
void remove_owned_containers(const std::string& docker_path, const std::string& owner);

// The backend's private host directory: mode 0711 (nobody can list it, so the names of the
// control directories inside are known only to the server and each zygote's container), with
// the seccomp profile for the containers. Removed with everything in it when destroyed.
class DockerRuntime {
 public:
  DockerRuntime();  // throws with the reason
  ~DockerRuntime();
  DockerRuntime(const DockerRuntime&) = delete;
  DockerRuntime& operator=(const DockerRuntime&) = delete;
  const std::string& path() const { return path_; }
  const std::string& seccomp_profile() const { return profile_; }

 private:
  std::string path_;
  std::string profile_;
};

// A one-shot command in a container of the image (the installer, the requirement check): the
// container's wall (docker_command.h) with `env` as its whole environment, a fresh /tmp, and each
// host path of `mounts` (path, writable) mounted under /run/mpes/mount/N, every mention of it in
// `command` and `env` rewritten to that place (an image's /root, say, is closed to its uid, so
// host paths cannot be mounted where they are).
std::vector<std::string> docker_oneshot_argv(const std::string& docker_path, const std::string& image,
                                             const std::string& seccomp_profile, const std::string& owner,
                                             std::vector<std::string> command, std::vector<std::string> env,
                                             const std::vector<std::pair<std::string, bool>>& mounts,
                                             bool network, uid_t uid, gid_t gid);

// The backend of one server: its runtime directory and the docker check, made once (by whoever
// asks first, on a worker thread) and then read from any thread.
class DockerBackend {
 public:
  DockerBackend(std::string docker_path, std::string image);
  // Blocking the first time (check_docker); the same answer afterwards.
  DockerStatus check();
  // nullopt until check() has answered.
  std::optional<DockerStatus> status() const;
  const std::string& docker_path() const { return docker_path_; }
  const std::string& image() const { return image_; }
  const DockerRuntime* runtime() const { return runtime_.get(); }
  // At shutdown, once no zygote or installer needs it: removes the runtime directory.
  void remove_runtime() { runtime_.reset(); }
  const std::string& owner() const { return owner_; }

 private:
  std::string docker_path_;
  std::string image_;
  std::string owner_;
  std::unique_ptr<DockerRuntime> runtime_;
  std::string runtime_error_;
  std::once_flag checked_;
  mutable std::mutex mutex_;
  std::optional<DockerStatus> status_;
};

}  // namespace engine
