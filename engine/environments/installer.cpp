#include "engine/environments/installer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>

#include <spdlog/spdlog.h>

#include "sandbox/bwrap_command.h"
#include "sandbox/memfd.h"
#include "sandbox/path_search.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"
#include "engine/environments/build_python.h"
#include "sandbox/user_network.h"

namespace engine::deps {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements,
                                           InstallPass pass, bool confined_builds) {
  const bool wheels_only = pass == InstallPass::wheels_only;
  confined_builds = confined_builds && !wheels_only;
  std::vector<std::string> cmd;
  if (kind == InstallerKind::uv) {
    // Copies, never hard links: the environment must not share inodes with a writable cache.
    cmd = {uv_program, "pip", "install", "--target", target, "--python", interpreter.executable};
    if (wheels_only) {
      cmd.insert(cmd.end(), {"--cache-dir", cache_dir, "--no-build"});
    } else {
      cmd.emplace_back("--no-cache");
    }
    cmd.insert(cmd.end(), {"--link-mode", "copy"});
    if (!confined_builds) cmd.emplace_back("--compile-bytecode");
    cmd.emplace_back("--no-progress");
  } else {
    // -I: no PYTHON* variables, no user site, no cwd on sys.path.
    cmd = {interpreter.executable, "-I", "-m", "pip", "install", "--target", target,
           "--no-input", "--disable-pip-version-check", "--no-warn-script-location",
           "--progress-bar", "off"};
    if (confined_builds) cmd.insert(cmd.begin() + 1, kFrontEndFlag);
    if (wheels_only) {
      cmd.insert(cmd.end(), {"--cache-dir", cache_dir, "--only-binary", ":all:"});
    } else {
      cmd.emplace_back("--no-cache-dir");
    }
  }
  if (index.offline) {
    cmd.emplace_back(kind == InstallerKind::uv ? "--offline" : "--no-index");
  }
  if (index.index_url && !(index.offline && kind == InstallerKind::pip)) {
    cmd.emplace_back("--index-url");
    cmd.push_back(*index.index_url);
  }
  if (!(index.offline && kind == InstallerKind::pip)) {
    for (const auto& url : index.extra_index_urls) {
      cmd.emplace_back("--extra-index-url");
      cmd.push_back(url);
    }
  }
  for (const auto& link : index.find_links) {
    cmd.emplace_back("--find-links");
    cmd.push_back(link);
  }
  cmd.emplace_back("--");
  cmd.insert(cmd.end(), requirements.begin(), requirements.end());
  return cmd;
}

std::vector<std::string> bytecode_command(const Interpreter& interpreter, const std::string& target) {
  // -q: errors only (a file that does not compile is left as source, as uv and pip leave it);
  // -j 0: one process per core.
  return {interpreter.executable, "-I", "-m", "compileall", "-q", "-j", "0", target};
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "OSError: [Errno 28] ...", "pip._vendor.x.ReadTimeoutError: ..." at the start of a line: the
// last line of a Python traceback.
bool is_exception_line(std::string_view line) {
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view name = line.substr(0, colon);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exit");
}

std::string sigabbrev(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

}  // namespace

std::string decisive_lines(std::string_view output) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= output.size();) {
    auto nl = output.find('\n', start);
    if (nl == std::string_view::npos) nl = output.size();
    lines.push_back(output.substr(start, nl - start));
    start = nl + 1;
  }
  std::vector<std::string_view> picked;
  bool in_block = false;  // a multi-line explanation that follows a decisive line
  bool pip_exception = false;  // after pip's "ERROR: Exception:" (a traceback follows)
  bool backend_stderr = false;  // after uv's "[stderr]": a failed build backend's own output
  for (auto raw : lines) {
    auto line = trim(raw);
    if (line.empty()) {
      in_block = false;
      continue;
    }
    if (line == "[stderr]") {
      backend_stderr = true;
      in_block = false;
      continue;
    }
    if (backend_stderr && is_exception_line(line)) {
      // The exception the build backend failed with (e.g. "ModuleNotFoundError: No module named
      // 'numpy'"): what says why the build failed.
      picked.push_back(line);
      in_block = false;
    } else if (pip_exception && is_exception_line(raw)) {
      // pip's "ERROR: Exception:" is followed by a traceback whose last line names the cause
      // (e.g. "OSError: [Errno 28] No space left on device: '...'").
      picked.push_back(line);
      in_block = false;
    } else if (starts_with(line, "ERROR:") || starts_with(line, "error:")) {
      if (line == "ERROR: Exception:") pip_exception = true;
      picked.push_back(line);
      in_block = starts_with(line, "error:");  // uv explains below its error line
    } else if (starts_with(line, "The conflict is caused by:")) {
      picked.push_back(line);
      in_block = true;
    } else if (starts_with(line, "To fix this") || starts_with(line, "hint:")) {
      in_block = false;
    } else if (starts_with(line, "\u00d7") || starts_with(line, "\u2570\u2500\u25b6") ||
               starts_with(line, "\u251c\u2500\u25b6")) {
      picked.push_back(line);  // uv: "× No solution found", "╰─▶ Because ..."
      in_block = true;
    } else if (in_block && (raw.size() > line.size())) {
      picked.push_back(line);  // indented continuation
    } else {
      in_block = false;
    }
  }
  if (picked.empty()) {
    // Nothing recognisable: the last few lines say the most.
    for (auto it = lines.rbegin(); it != lines.rend() && picked.size() < 12; ++it) {
      auto line = trim(*it);
      if (!line.empty()) picked.insert(picked.begin(), line);
    }
  }
  std::string text;
  std::size_t count = 0;
  for (auto line : picked) {
    if (count == 30 || text.size() + line.size() > 4000) {
      text += "[... more installer output omitted]\n";
      break;
    }
    // pip repeats its "ERROR:" line for the same requirement once per attempt.
    std::string entry(line);
    if (text.find(entry + "\n") != std::string::npos) continue;
    text += entry;
    text += '\n';
    ++count;
  }
  if (!text.empty()) text.pop_back();
  return text;
}

sandbox::BuildConfinement build_confinement(const InstallerOptions& options) {
  if (!options.sandboxed) return {false, "not sandboxed (--sandbox-backend none)"};
  if (options.container) {
    return {false, "not confined to their own directories (the docker backend's installer container has no "
                   "build-python stand-in): they can write the environment being built"};
  }
  if (options.build_python_path.empty()) {
    return {false, "not confined to their own directories (no build-python stand-in was given): they can "
                   "write the environment being built"};
  }
  static const sandbox::BuildConfinement probed = sandbox::plan_build_confinement(sandbox::probe_landlock());
  return probed;
}

InstallerIdentity installer_identity(const InstallerOptions& options) {
  if (options.sandboxed && ::geteuid() == 0) {
    return {options.unprivileged_uid, options.unprivileged_gid, true};
  }
  return {::geteuid(), ::getegid(), false};
}

namespace {

std::string real_path(const std::string& path) {
  std::error_code ec;
  auto r = fs::canonical(path, ec);
  return ec ? std::string() : r.string();
}

std::string local_find_links_path(const std::string& link) {
  if (starts_with(link, "file://")) return link.substr(7);
  if (link.find("://") != std::string::npos) return {};
  return link;
}

}  // namespace

sandbox::BwrapSandbox installer_sandbox(const std::string& bwrap_program, const Interpreter& interpreter,
                                       const std::string& uv_program, const IndexOptions& index,
                                       const std::string& target, const std::string& cache,
                                       std::vector<std::string> command,
                                       const std::vector<std::string>& config_paths,
                                       const std::string& build_python) {
  sandbox::BwrapSandbox box;
  box.bwrap_path = bwrap_program;
  box.network = !index.offline;
  box.nested_user_namespaces = false;
  box.python_major_minor = interpreter.major_minor;  // Debian's read /etc/pythonX.Y/sitecustomize.py
  box.tmp = sandbox::Tmp::tmpfs;                     // HOME and TMPDIR
  // Builds may use /dev/shm (multiprocessing); the root and /dev die with the sandbox.
  box.read_only_root = false;
  // Read-only at their real place, each once (sandbox::add_host_path).
  std::vector<std::string> ro;
  auto want = [&ro](const std::string& path) { sandbox::add_host_path(ro, real_path(path)); };
  want(interpreter.prefix);
  want(interpreter.base_prefix);
  want(fs::path(interpreter.executable).parent_path().string());
  for (const auto& dir : interpreter.site_packages) want(dir);
  if (!uv_program.empty()) want(uv_program);
  for (const auto& link : index.find_links) {
    auto local = local_find_links_path(link);
    if (!local.empty() && fs::exists(local)) want(local);
  }
  // At the place they are named by (a symlink's target is mounted there).
  for (const auto& path : config_paths) sandbox::add_host_path(ro, path);
  for (const auto& path : ro) box.binds.push_back({path, path});
  // Last, over what is bound above: the builds' interpreter stand-in.
  if (!build_python.empty()) {
    const std::string exe = real_path(interpreter.executable);
    auto binds = build_python_binds(build_python, exe);
    if (binds.empty()) {
      throw InstallerUnavailable("cannot confine builds from " + interpreter.executable +
                                 ": its path has no prefix directory");
    }
    box.binds.insert(box.binds.end(), binds.begin(), binds.end());
  }
  box.writable = {target};
  if (!cache.empty()) box.writable.push_back(cache);
  box.chdir = "/tmp";
  box.command = std::move(command);
  return box;
}

std::vector<sandbox::ResourceLimit> installer_rlimits(const InstallerOptions& options,
                                                      const InstallRequest& request) {
  const sandbox::Limits& l = options.limits;
  std::vector<sandbox::ResourceLimit> out = {
      {RLIMIT_FSIZE, l.file_size_bytes},
      {RLIMIT_CORE, 0},
      {RLIMIT_CPU, static_cast<unsigned long long>(std::max(1, options.timeout_seconds))},
  };
  if (!request.memory_counted) out.push_back({RLIMIT_DATA, l.memory_bytes});
  if (!request.processes_counted) out.push_back({RLIMIT_NPROC, l.max_processes});
  return out;
}

namespace {

// The runs' seccomp policy as a BPF program in a sealed memfd, for bwrap's --seccomp.
sandbox::UniqueFd seccomp_memfd() {
  static const sandbox::SeccompProgram program = sandbox::SeccompProgram::compile(sandbox::Policy{});
  const auto& bpf = program.bpf();
  try {
    return sandbox::sealed_memfd("installer-seccomp",
                                 std::string_view(reinterpret_cast<const char*>(bpf.data()), bpf.size()));
  } catch (const std::system_error& e) {
    throw InstallerUnavailable(std::string("cannot pass the installer's seccomp program: ") + e.what());
  }
}

// Removes what a failed pass left in `dir`, keeping `dir` itself (its owner and mode).
void empty_directory(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    if (rm) throw InstallerUnavailable("cannot empty " + dir + " between installer passes: " + rm.message());
  }
  if (ec) throw InstallerUnavailable("cannot read " + dir + ": " + ec.message());
}

}  // namespace

InstallOutcome run_installer(const InstallerOptions& options, const InstallRequest& request,
                             const std::function<void(std::string_view line)>& on_line,
                             sandbox::KillSwitch* kill_switch) {
  if (request.interpreter == nullptr) throw std::invalid_argument("run_installer: no interpreter");
  const Interpreter& interp = *request.interpreter;

  auto uv = sandbox::find_executable(options.uv_path);
  InstallerKind kind;
  std::string uv_program;
  if (uv) {
    kind = InstallerKind::uv;
    uv_program = real_path(*uv);
  } else if (request.interpreter_has_pip) {
    kind = InstallerKind::pip;
  } else {
    throw InstallerUnavailable(
        "no package installer: uv was not found (--uv-path '" + options.uv_path + "') and " +
        interp.executable + " has no pip module; install uv, or pip for that interpreter "
        "(Debian: apt install python3-pip)");
  }

  const std::string cache = request.cache_dir + (kind == InstallerKind::uv ? "/uv" : "/pip");
  const InstallerIdentity who = installer_identity(options);
  {
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (ec) throw InstallerUnavailable("cannot create the installer cache " + cache + ": " + ec.message());
    if (who.dropped && ::chown(cache.c_str(), who.uid, who.gid) != 0) {
      throw InstallerUnavailable("cannot hand the installer cache " + cache + " to uid " +
                                 std::to_string(who.uid) + ": " + errno_text(errno));
    }
  }

  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
                                  "LANG=C.UTF-8", "PYTHONNOUSERSITE=1", "PIP_NO_INPUT=1",
                                  "NO_COLOR=1"};
  // The user's TLS roots, proxies, index settings and configuration files, as their own uv or
  // pip would use them (installer_config.h).
  const InstallerPassthrough passthrough = installer_passthrough(kind, process_environment());
  env.insert(env.end(), passthrough.env.begin(), passthrough.env.end());

  sandbox::UniqueFd seccomp;
  std::optional<sandbox::UserNetwork> network;
  std::string bwrap_program;
  if (options.container && who.dropped) {
    // The container's installer runs as that uid, with the target and the cache mounted.
    for (const auto& dir : {request.target, cache}) {
      if (::chown(dir.c_str(), who.uid, who.gid) != 0) {
        throw InstallerUnavailable("cannot hand " + dir + " to uid " + std::to_string(who.uid) + ": " +
                                   errno_text(errno));
      }
    }
  }
  if (options.sandboxed && !options.container) {
    auto bwrap = sandbox::find_executable(options.bwrap_path);
    if (!bwrap) {
      throw InstallerUnavailable(
          "bubblewrap (" + options.bwrap_path + ") was not found, so dependencies cannot be "
          "installed safely; install it (Debian/Ubuntu: apt install bubblewrap) or run with "
          "--sandbox-backend none");
    }
    bwrap_program = *bwrap;
    // The runs' syscall filter, installed by bwrap (with no_new_privs) right before the
    // installer starts: fd 3 in bwrap's process.
    try {
      seccomp = seccomp_memfd();
    } catch (const sandbox::SetupError& e) {
      throw InstallerUnavailable(std::string("cannot build the installer's seccomp filter: ") + e.what());
    }
    // Its network: a namespace of its own behind a user-mode stack, not the host's (whose
    // loopback services and abstract sockets it would reach). One for both passes.
    if (!options.index.offline) {
      const auto pasta = sandbox::UserNetwork::find_pasta(options.pasta_path);
      const std::string unavailable = !pasta ? "pasta (Debian: apt install passt) was not found"
                                      : options.network_agent_path.empty() ? "no network agent was given"
                                                                           : sandbox::UserNetwork::unavailable_reason();
      if (unavailable.empty()) {
        try {
          network.emplace(sandbox::UserNetwork::start(*pasta, options.network_agent_path, sandbox::IpFamilies::both));
        } catch (const sandbox::SpawnError& e) {
          throw InstallerUnavailable(std::string("the installer's network could not be set up: ") + e.what());
        }
      } else {
        static std::once_flag warned;
        std::call_once(warned, [&] { spdlog::warn("installers share the host's network: {}", unavailable); });
      }
    }
  }

  // Builds from source run through the stand-in (build_python.h): each writes only its own
  // directories and, with --network off and a network for the front-end, has none.
  const bool builds_offline = options.builds_without_network && options.sandboxed && !options.container &&
                              !options.index.offline;
  if (builds_offline && options.build_python_path.empty()) {
    throw InstallerUnavailable("builds cannot be kept off the network: no build-python stand-in was given");
  }
  const bool confine_builds = options.sandboxed && !options.container && !options.build_python_path.empty();
  if (builds_offline) env.push_back(std::string(kNoNetworkVariable) + "=1");

  // One pass (InstallPass): the shared cache writable in the wheels_only pass only. Or, after a
  // uv pass whose builds were confined, the bytecode compilation (`bytecode`): no network, no
  // stand-in.
  auto process_spec = [&](InstallPass pass, bool bytecode = false) {
    const std::string pass_cache = pass == InstallPass::wheels_only ? cache : std::string();
    const bool stand_in = pass == InstallPass::with_builds && confine_builds && !bytecode;
    std::vector<std::string> command =
        bytecode ? bytecode_command(interp, request.target)
                 : installer_command(kind, uv_program, interp, request.target, cache, options.index,
                                     request.requirements, pass, stand_in);
    sandbox::ProcessSpec spec;
    spec.env = env;
    spec.umask = 022;
    spec.timeout_ms = options.timeout_seconds * 1000;
    spec.cgroup_join_fds = request.cgroup_join_fds;
    spec.rlimits = installer_rlimits(options, request);
    if (options.container) {
      // Everything the installer reads or writes, at its own path in the container: the
      // installer (uv), local find-links, the user's configuration, the target and (in the
      // wheels-only pass) the cache.
      std::vector<ContainerMount> mounts = {{request.target, true}};
      if (!pass_cache.empty()) mounts.push_back({pass_cache, true});
      if (!uv_program.empty()) mounts.push_back({uv_program, false});
      for (const auto& link : options.index.find_links) {
        const auto local = local_find_links_path(link);
        if (!local.empty()) mounts.push_back({real_path(local), false});
      }
      // The user's TLS roots, uv/pip configuration and what they name (installer_config.h).
      for (const auto& path : passthrough.host_paths) mounts.push_back({path, false});
      spec.argv = options.container(command, env, mounts, true, who.uid, who.gid);
      spec.env = sandbox::inherited_environment();  // the client's: DOCKER_HOST and the like
      return spec;
    }
    if (!options.sandboxed) {
      spec.argv = std::move(command);
      return spec;
    }
    sandbox::BwrapSandbox box = installer_sandbox(
        bwrap_program, interp, uv_program, options.index, request.target, pass_cache, std::move(command),
        passthrough.host_paths, stand_in ? options.build_python_path : "");
    // bwrap reads the program from the fd's offset, which the previous pass moved.
    ::lseek(seccomp.get(), 0, SEEK_SET);
    spec.fds = {seccomp.get()};
    box.seccomp_fd = 3;
    if (bytecode) {
      box.network = false;  // loopback only
    } else if (network) {
      spec.userns_fd = network->userns_fd();
      spec.netns_fd = network->netns_fd();
    }
    spec.argv = sandbox::build_bwrap_argv(box);
    if (who.dropped) {
      // The unprivileged installer may not traverse to them (pyenv or the cache under a 0700
      // /root): staged, as the runner does for every sandbox.
      spec.run_as = sandbox::Identity{who.uid, who.gid};
      for (const auto& bind : box.binds) spec.reachable_paths.push_back(bind.source);
      for (const auto& path : box.writable) {
        const std::string real = real_path(path);
        if (real.empty()) throw InstallerUnavailable("the installer's directory " + path + " is missing");
        spec.reachable_paths.push_back(real);
      }
    }
    if (spdlog::should_log(spdlog::level::debug)) {
      std::string line;
      for (const auto& arg : spec.argv) line += (line.empty() ? "" : " ") + arg;
      spdlog::debug("installer command: {}", line);
    }
    return spec;
  };

  InstallOutcome outcome;
  outcome.installer = kind == InstallerKind::uv ? "uv" : "pip";
  spdlog::info("installing {} requirement(s) with {} into {}", request.requirements.size(),
               outcome.installer, request.target);
  outcome.process = sandbox::run_process(process_spec(InstallPass::wheels_only), on_line,
                                         kill_switch);  // SpawnError: cannot start
  const bool needs_builds = !outcome.process.ok() && !outcome.process.killed && !outcome.process.timed_out;
  if (needs_builds && builds_offline && kind == InstallerKind::pip) {
    // pip builds in its own process, which must keep its network to fetch: refused, not leaked.
    outcome.ok = false;
    outcome.error = decisive_lines(outcome.process.err + "\n" + outcome.process.out) +
                    "\nnot installable from wheels alone, and with --network off builds from source run "
                    "without network, which needs uv as the installer (pip builds in its own process); "
                    "install uv (--uv-path), give wheels (--find-links), or use --network on";
    return outcome;
  }
  if (needs_builds) {
    // Not from wheels alone: again, from an empty target, with builds and no shared cache.
    empty_directory(request.target);
    spdlog::info("{}: not from wheels alone; again with builds allowed and no shared cache",
                 request.target);
    const sandbox::BuildConfinement confinement = build_confinement(options);
    if (!confinement.confined) {
      spdlog::warn("{}: builds from source: {}", request.target, confinement.description);
    }
    outcome.builds_confined = confine_builds && confinement.confined;
    outcome.process = sandbox::run_process(process_spec(InstallPass::with_builds), on_line, kill_switch);
    if (outcome.process.ok() && confine_builds && kind == InstallerKind::uv) {
      // What uv was not asked to do (installer_command): compiled by the interpreter alone.
      const sandbox::ProcessResult compiled =
          sandbox::run_process(process_spec(InstallPass::with_builds, true), on_line, kill_switch);
      if (compiled.killed || compiled.timed_out) {
        outcome.process = compiled;
      } else if (!compiled.ok()) {
        spdlog::warn("{}: some files were left without bytecode: {}", request.target,
                     decisive_lines(compiled.err + "\n" + compiled.out));
      }
    }
  }
  const auto& p = outcome.process;
  outcome.ok = p.ok();
  if (!outcome.ok) {
    if (p.killed) {
      outcome.error = "the installation was stopped (server shutting down or install cancelled)";
    } else if (p.timed_out) {
      outcome.error = "the installer did not finish within " +
                      std::to_string(options.timeout_seconds) + " s";
    } else {
      std::string lines = decisive_lines(p.err + "\n" + p.out);
      // Killed from outside (OOM killer, an operator): say so before whatever it printed last.
      // Under bubblewrap the installer's signal comes back as exit status 128 + signal.
      const int signal = p.term_signal != 0                                    ? p.term_signal
                         : options.sandboxed && p.exit_code > 128 && p.exit_code < 128 + 65 ? p.exit_code - 128
                                                                               : 0;
      if (signal != 0) {
        lines = "the installer (" + outcome.installer + ") was killed by signal " + std::to_string(signal) +
                " (" + sigabbrev(signal) + ") before it finished" + (lines.empty() ? "" : "; its last output:\n" + lines);
      }
      // bwrap failing to set up the sandbox is the host's problem, not the requirements'.
      if (options.sandboxed && lines.rfind("bwrap:", 0) == 0) {
        throw InstallerUnavailable("the installer sandbox could not start (" + lines +
                                   "); user namespaces may be disabled on this host");
      }
      outcome.error = lines;
    }
  }
  return outcome;
}

}  // namespace engine::deps
