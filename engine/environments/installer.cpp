#include "engine/environments/installer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "sandbox/bwrap_command.h"
#include "sandbox/path_search.h"

namespace engine::deps {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

std::vector<std::string> installer_command(InstallerKind kind, const std::string& uv_program,
                                           const Interpreter& interpreter, const std::string& target,
                                           const std::string& cache_dir, const IndexOptions& index,
                                           const std::vector<std::string>& requirements) {
  std::vector<std::string> cmd;
  if (kind == InstallerKind::uv) {
    // Copies, never hard links: the environment must not share inodes with a writable cache.
    cmd = {uv_program, "pip", "install", "--target", target, "--python", interpreter.executable,
           "--cache-dir", cache_dir, "--link-mode", "copy", "--compile-bytecode", "--no-progress"};
  } else {
    // -I: no PYTHON* variables, no user site, no cwd on sys.path.
    cmd = {interpreter.executable, "-I", "-m", "pip", "install", "--target", target,
           "--no-input", "--disable-pip-version-check", "--no-warn-script-location",
           "--progress-bar", "off", "--cache-dir", cache_dir};
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
  for (auto raw : lines) {
    auto line = trim(raw);
    if (line.empty()) {
      in_block = false;
      continue;
    }
    if (pip_exception && is_exception_line(raw)) {
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
                                       std::vector<std::string> command) {
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
  for (const auto& path : ro) box.binds.push_back({path, path});
  box.writable = {target, cache};
  box.chdir = "/tmp";
  box.command = std::move(command);
  return box;
}

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

  std::vector<std::string> command = installer_command(
      kind, uv_program, interp, request.target, cache, options.index, request.requirements);

  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
                                  "LANG=C.UTF-8", "PYTHONNOUSERSITE=1", "PIP_NO_INPUT=1",
                                  // No host pip.conf: index options are passed explicitly.
                                  "PIP_CONFIG_FILE=/dev/null", "UV_NO_CONFIG=1",
                                  "NO_COLOR=1"};
  for (const char* name : {"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY",
                           "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}) {
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }

  sandbox::ProcessSpec spec;
  spec.env = env;
  spec.umask = 022;
  spec.timeout_ms = options.timeout_seconds * 1000;
  if (options.sandboxed) {
    auto bwrap = sandbox::find_executable(options.bwrap_path);
    if (!bwrap) {
      throw InstallerUnavailable(
          "bubblewrap (" + options.bwrap_path + ") was not found, so dependencies cannot be "
          "installed safely; install it (Debian/Ubuntu: apt install bubblewrap) or run with "
          "--sandbox-backend none");
    }
    const sandbox::BwrapSandbox box = installer_sandbox(*bwrap, interp, uv_program, options.index,
                                                        request.target, cache, command);
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
  } else {
    spec.argv = command;
  }

  InstallOutcome outcome;
  outcome.installer = kind == InstallerKind::uv ? "uv" : "pip";
  if (spdlog::should_log(spdlog::level::debug)) {
    std::string line;
    for (const auto& arg : spec.argv) line += (line.empty() ? "" : " ") + arg;
    spdlog::debug("installer command: {}", line);
  }
  spdlog::info("installing {} requirement(s) with {} into {}", request.requirements.size(),
               outcome.installer, request.target);
  outcome.process = sandbox::run_process(spec, on_line, kill_switch);  // SpawnError: cannot start
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
