#include "engine/pool/docker_host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "engine/interpreters/discovery.h"
#include "profiles/mpes_profiles.h"
#include "sandbox/docker_command.h"
#include "sandbox/owned_dirs.h"
#include "sandbox/path_search.h"
#include "sandbox/process.h"

namespace engine {
namespace {

// A clone into the namespaces each run enters (user, pid, mount, ipc, uts, cgroup), from
// Python's ctypes: what the zygote's runs will do, under the same profile and wall.
constexpr const char* kNamespaceProbe = R"PY(
import ctypes, os, platform
nr = {'x86_64': 56, 'aarch64': 220}.get(platform.machine())
if nr is None:
    print('MPES-NS ok (not checked on ' + platform.machine() + ')'); raise SystemExit(0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
flags = 0x10000000 | 0x20000000 | 0x00020000 | 0x08000000 | 0x04000000 | 0x02000000 | 17
pid = libc.syscall(ctypes.c_long(nr), ctypes.c_long(flags), ctypes.c_long(0), ctypes.c_long(0),
                   ctypes.c_long(0), ctypes.c_long(0))
if pid == 0:
    os._exit(0)
if pid < 0:
    print('MPES-NS clone: ' + os.strerror(ctypes.get_errno())); raise SystemExit(3)
os.waitpid(pid, 0)
print('MPES-NS ok')
)PY";

sandbox::ProcessResult run(const std::vector<std::string>& argv, int timeout_ms) {
  sandbox::ProcessSpec spec;
  spec.die_with_parent = true;
  spec.argv = argv;
  spec.env = sandbox::inherited_environment();
  spec.timeout_ms = timeout_ms;
  spec.max_capture = 64 << 10;
  return sandbox::run_process(spec);
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  return text;
}

// The last non-empty line: docker's own error message.
std::string last_line(const std::string& text) {
  std::string t = trimmed(text);
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

void remove_where(const std::string& docker_path, bool (*remove)(const std::string& owner, const std::string& arg),
                  const std::string& arg, std::vector<std::string>* removed) {
  const auto listed = run(sandbox::docker_list_owned_argv(docker_path), 30000);
  if (!listed.ok()) return;
  std::vector<std::string> ids;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    const auto space = line.find(' ');
    if (space == std::string::npos) continue;
    if (remove(line.substr(space + 1), arg)) ids.push_back(line.substr(0, space));
  }
  if (ids.empty()) return;
  const auto result = run(sandbox::docker_remove_argv(docker_path, ids), 60000);
  if (!result.ok()) spdlog::warn("docker rm: {}", last_line(result.err));
  if (removed) removed->insert(removed->end(), ids.begin(), ids.end());
}

}  // namespace

std::string DockerStatus::describe(const std::string& image) const {
  if (!ready()) return "unavailable: " + problem + (fix.empty() ? "" : ". Fix: " + fix);
  return "ready: docker " + server_version + ", image " + image + " (" + image_id.substr(0, 19) +
         "), Python " + (interpreter ? interpreter->version : std::string("?"));
}

DockerStatus check_docker(const std::string& docker_path, const std::string& image,
                          const std::string& seccomp_profile) {
  DockerStatus status;
  const auto found = docker_path.find('/') == std::string::npos ? sandbox::find_executable(docker_path)
                                                                 : std::optional<std::string>(docker_path);
  if (!found || ::access(found->c_str(), X_OK) != 0) {
    status.problem = "the docker client '" + docker_path + "' is not installed";
    status.fix = "install Docker (Debian/Ubuntu: apt install docker.io) or podman and pass its path with "
                 "--docker-path, or use --sandbox-backend native";
    return status;
  }
  status.docker_path = *found;
  const auto version = run({*found, "version", "--format", "{{.Server.Version}}"}, 30000);
  if (!version.ok() || trimmed(version.out).empty()) {
    status.problem = "the docker daemon does not answer (" +
                     (version.timed_out ? std::string("no answer within 30 s") : last_line(version.err + version.out)) + ")";
    status.fix = "start it (sudo systemctl start docker, or run dockerd as root), and let this user reach its "
                 "socket (the docker group), or use --sandbox-backend native";
    return status;
  }
  status.server_version = trimmed(version.out);
  const auto inspected = run({*found, "image", "inspect", "--format", "{{.Id}}", image}, 30000);
  if (!inspected.ok()) {
    status.problem = "the image " + image + " is not present (" + last_line(inspected.err) + ")";
    status.fix = std::string(image == kDefaultDockerImage
                                 ? "build it: scripts/build-image.sh (offline, from Debian's packages), or "
                                   "docker build -t " + image + " -f profiles/Dockerfile profiles"
                                 : "docker pull " + image + ", or choose another with --docker-image");
    return status;
  }
  status.image_id = trimmed(inspected.out);
  // Containers whose server is gone (a crash, a kill -9): nobody else will remove them.
  remove_where(*found, [](const std::string& owner, const std::string&) { return !sandbox::docker_owner_alive(owner); },
               "", &status.leftovers_removed);
  for (const auto& id : status.leftovers_removed) spdlog::info("removed container {} left by a server that is gone", id);

  // The image's interpreter, probed in a container as the zygote's: the same profile and wall,
  // so a daemon that refuses them says so here.
  sandbox::DockerContainer probe;
  probe.docker_path = *found;
  probe.image = image;
  probe.name = "mpes-probe-" + std::to_string(::getpid());
  probe.labels = {{sandbox::kDockerOwnerLabel, sandbox::docker_owner()}};
  probe.seccomp_profile = seccomp_profile;
  probe.network = false;
  std::string error;
  status.interpreter = probe_interpreter_with(sandbox::build_docker_run_argv(probe), kDockerPython, &error);
  if (!status.interpreter) {
    status.problem = "the image's interpreter could not run in the sandbox container: " + error;
    status.fix = "check that the daemon accepts a seccomp profile and --security-opt systempaths=unconfined "
                 "(docker >= 19.03; rootless podman may refuse them), and that the image has " +
                 std::string(kDockerPython) + " with its shared libpython, as scripts/build-image.sh builds it";
    return status;
  }
  if (!status.interpreter->shared()) {
    status.problem = "the image's " + std::string(kDockerPython) + " has no shared libpython for the zygote to load";
    status.fix = "install the interpreter's libpythonX.Y package in the image (Debian: libpython3.11), as "
                 "scripts/build-image.sh does";
    status.interpreter.reset();
    return status;
  }
  // Runs need namespaces of their own inside the container: a kernel or a daemon that forbids
  // them there (user namespaces disabled or restricted, another profile) is said here, once,
  // rather than in the failure of every run.
  sandbox::DockerContainer nested = probe;
  nested.name += "-ns";
  nested.command = {kDockerPython, "-I", "-c", kNamespaceProbe};
  const auto ns = run(sandbox::build_docker_run_argv(nested), 60000);
  if (ns.out.find("MPES-NS ok") == std::string::npos) {
    status.problem = "runs cannot have namespaces of their own inside the container (" +
                     last_line(ns.out + "\n" + ns.err) + ")";
    status.fix = "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Ubuntu "
                 "kernel.apparmor_restrict_unprivileged_userns=0), or use --sandbox-backend native";
    status.interpreter.reset();
    return status;
  }
  status.interpreter->source = "docker image " + image;
  return status;
}

namespace {

// Replaces `from` in `text` where it is a whole path (followed by nothing, '/', or a quote).
std::string replace_path(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    const std::size_t end = at + from.size();
    if (end == text.size() || text[end] == '/' || text[end] == '"' || text[end] == ':') {
      text.replace(at, from.size(), to);
      at += to.size();
    } else {
      at = end;
    }
  }
  return text;
}

}  // namespace

std::vector<std::string> docker_oneshot_argv(const std::string& docker_path, const std::string& image,
                                             const std::string& seccomp_profile, const std::string& owner,
                                             std::vector<std::string> command, std::vector<std::string> env,
                                             const std::vector<std::pair<std::string, bool>>& mounts,
                                             bool network, uid_t uid, gid_t gid) {
  static std::atomic<unsigned> counter{0};
  sandbox::DockerContainer c;
  c.docker_path = docker_path;
  c.image = image;
  c.name = "mpes-" + std::to_string(::getpid()) + "-job-" + std::to_string(++counter);
  c.labels = {{sandbox::kDockerOwnerLabel, owner}};
  c.seccomp_profile = seccomp_profile;
  c.network = network;
  c.uid = uid;
  c.gid = gid;
  c.tmpfs.push_back({"/tmp", "size=1073741824,mode=1777"});
  // Longest first, so that a path inside another mounted one is rewritten as itself.
  auto order = mounts;
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string inside = "/run/mpes/mount/" + std::to_string(i);
    c.binds.push_back({order[i].first, inside, !order[i].second});
    for (auto& arg : command) arg = replace_path(arg, order[i].first, inside);
    for (auto& e : env) e = replace_path(e, order[i].first, inside);
  }
  c.env = std::move(env);
  c.command = std::move(command);
  return sandbox::build_docker_run_argv(c);
}

void remove_owned_containers(const std::string& docker_path, const std::string& owner) {
  remove_where(docker_path, [](const std::string& label, const std::string& mine) { return label == mine; }, owner,
               nullptr);
}

DockerRuntime::DockerRuntime() {
  const char* env = std::getenv("XDG_RUNTIME_DIR");
  const std::string base = env != nullptr && *env == '/' ? env : "/tmp";
  // Those of servers killed outright go first (each server removes its own when it ends).
  sandbox::remove_dirs_of_gone_owners(base, "mpes-docker-");
  try {
    path_ = sandbox::make_owned_dir(base, "mpes-docker-");
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the docker backend's runtime directory: ") + e.what());
  }
  ::chmod(path_.c_str(), 0711);
  profile_ = path_ + "/seccomp.json";
  std::ofstream out(profile_);
  out << profiles::docker_seccomp();
  out.close();
  if (!out) throw std::runtime_error("cannot write the docker seccomp profile " + profile_);
  ::chmod(profile_.c_str(), 0644);
}

DockerRuntime::~DockerRuntime() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

DockerBackend::DockerBackend(std::string docker_path, std::string image)
    : docker_path_(std::move(docker_path)), image_(std::move(image)), owner_(sandbox::docker_owner()) {
  try {
    runtime_ = std::make_unique<DockerRuntime>();
  } catch (const std::exception& e) {
    runtime_error_ = e.what();
  }
}

DockerStatus DockerBackend::check() {
  // The check itself runs without the lock: status() answers the io thread meanwhile.
  std::call_once(checked_, [this] {
    DockerStatus result;
    if (!runtime_) {
      result.problem = runtime_error_;
      result.fix = "make $XDG_RUNTIME_DIR (or /tmp) writable for the server";
    } else {
      result = check_docker(docker_path_, image_, runtime_->seccomp_profile());
    }
    if (!result.ready()) spdlog::error("docker backend: {}", result.describe(image_));
    std::lock_guard lock(mutex_);
    status_ = std::move(result);
  });
  std::lock_guard lock(mutex_);
  return *status_;
}

std::optional<DockerStatus> DockerBackend::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

}  // namespace engine
