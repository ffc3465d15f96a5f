#include "sandbox/docker_command.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace sandbox {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 of /proc/PID/stat: the start time in clock ticks since boot ("" when gone).
std::string start_time(pid_t pid) {
  const std::string stat = read_line("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

std::string boot_id() { return read_line("/proc/sys/kernel/random/boot_id"); }

}  // namespace

std::vector<std::string> build_docker_run_argv(const DockerContainer& c) {
  std::vector<std::string> argv = {c.docker_path, "run", "--rm", "--name", c.name};
  for (const auto& [key, value] : c.labels) {
    argv.insert(argv.end(), {"--label", key + "=" + value});
  }
  argv.insert(argv.end(), {
      // The outer wall.
      "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
      "--security-opt", "seccomp=" + c.seccomp_profile,
      // Each run mounts a /proc of its own pid namespace; the kernel allows that only where no
      // part of /proc is hidden under another mount, as docker's masked paths are. The
      // container's processes hold no capability and an unprivileged uid, so the unmasked files
      // stay unreadable or unwritable to them, and each run sees only its own /proc.
      "--security-opt", "systempaths=unconfined",
      "--user", std::to_string(c.uid) + ":" + std::to_string(c.gid),
      "--network", c.network ? "bridge" : "none",
      "--hostname", c.hostname,
      "--ipc", "private",
      "--log-driver", "none",
  });
  if (c.memory_bytes != 0) {
    argv.insert(argv.end(), {"--memory", std::to_string(c.memory_bytes), "--memory-swap",
                             std::to_string(c.memory_bytes)});
  }
  if (c.pids_limit != 0) argv.insert(argv.end(), {"--pids-limit", std::to_string(c.pids_limit)});
  for (const auto& [path, options] : c.tmpfs) {
    argv.insert(argv.end(), {"--tmpfs", path + (options.empty() ? "" : ":" + options)});
  }
  for (const auto& b : c.binds) {
    argv.insert(argv.end(), {"--mount", "type=bind,source=" + b.source + ",target=" + b.dest +
                                            (b.read_only ? ",readonly" : "")});
  }
  for (const auto& e : c.env) argv.insert(argv.end(), {"--env", e});
  argv.insert(argv.end(), {"--entrypoint", c.command.empty() ? std::string() : c.command.front()});
  argv.push_back(c.image);
  if (!c.command.empty()) argv.insert(argv.end(), c.command.begin() + 1, c.command.end());
  return argv;
}

std::string docker_owner() {
  const pid_t pid = ::getpid();
  return boot_id() + ":" + std::to_string(pid) + ":" + start_time(pid);
}

bool docker_owner_alive(const std::string& owner) {
  const auto first = owner.find(':');
  const auto second = first == std::string::npos ? std::string::npos : owner.find(':', first + 1);
  if (second == std::string::npos) return false;  // not ours to judge: treated as left over
  if (owner.substr(0, first) != boot_id()) return false;  // a server of an earlier boot
  const std::string pid_text = owner.substr(first + 1, second - first - 1);
  pid_t pid = 0;
  try {
    pid = static_cast<pid_t>(std::stol(pid_text));
  } catch (const std::exception&) {
    return false;
  }
  if (pid <= 0) return false;
  const std::string started = start_time(pid);
  return !started.empty() && started == owner.substr(second + 1);
}

std::vector<std::string> docker_list_owned_argv(const std::string& docker_path) {
  return {docker_path, "ps", "--all", "--no-trunc", "--filter", std::string("label=") + kDockerOwnerLabel,
          "--format", std::string("{{.ID}} {{.Label \"") + kDockerOwnerLabel + "\"}}"};
}

std::vector<std::string> docker_remove_argv(const std::string& docker_path, const std::vector<std::string>& ids) {
  std::vector<std::string> argv = {docker_path, "rm", "--force"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  return argv;
}

}  // namespace sandbox
