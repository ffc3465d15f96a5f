#include "engine/environments/build_python.h"

#include <algorithm>
#include <fstream>
#include <system_error>

namespace engine::deps {

namespace fs = std::filesystem;

namespace {

bool ends_path(char c) {
  switch (c) {
    case '"': case '\'': case '`': case '\\': case '(': case ')': case '[': case ']': case '{': case '}':
    case ',': case ';': case '\0': case ' ': case '\t': case '\n': case '\r': case '\f': case '\v':
      return true;
    default:
      return false;
  }
}

// `path` canonical and strictly beneath `root` (also canonical), not `root` itself.
bool strictly_beneath(const std::string& path, const std::string& root) {
  return path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

// At most this much of a hook's input file is read (pyproject_hooks writes a few hundred bytes).
constexpr std::streamsize kMaxHookInput = 1 << 20;

std::string read_bounded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text(static_cast<std::size_t>(kMaxHookInput), '\0');
  in.read(text.data(), kMaxHookInput);
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

}  // namespace

std::vector<std::string> tmp_paths_in(std::string_view text, const std::string& tmp_root) {
  std::vector<std::string> out;
  const std::string needle = tmp_root + "/";
  for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
    // Only at the start of a name: not "/x/tmp/...".
    if (at > 0 && !ends_path(text[at - 1]) && text[at - 1] != '=') continue;
    std::size_t end = at + needle.size();
    while (end < text.size() && !ends_path(text[end])) ++end;
    if (end > at + needle.size()) out.emplace_back(text.substr(at, end - at));
  }
  return out;
}

std::vector<std::string> build_writable_dirs(const std::vector<std::string>& argv, const std::string& cwd,
                                             const std::string& tmp_root, const std::vector<std::string>& environment) {
  std::error_code ec;
  const fs::path root_path = fs::canonical(tmp_root, ec);
  if (ec) return {};
  const std::string root = root_path.string();
  const std::string interpreter_mount = root + "/" + fs::path(kRealInterpreterMount).filename().string();

  std::vector<std::string> out;
  // A directory that exists (canonical), beneath the root, not the interpreter's mount: kept.
  auto keep_directory = [&](const fs::path& path) {
    std::error_code e;
    const fs::path real = fs::canonical(path, e);
    if (e || !fs::is_directory(real, e)) return false;
    const std::string text = real.string();
    if (!strictly_beneath(text, root) || text == interpreter_mount || strictly_beneath(text, interpreter_mount)) {
      return false;
    }
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
    return true;
  };
  // A name the front-end gave the build: the directory, or, when nothing is there yet, its parent.
  auto named = [&](const std::string& name) {
    const fs::path path = fs::path(name).lexically_normal();
    if (!path.is_absolute()) return;
    std::error_code e;
    const auto status = fs::symlink_status(path, e);
    if (status.type() == fs::file_type::not_found) {
      keep_directory(path.parent_path());
    } else if (status.type() == fs::file_type::directory) {
      keep_directory(path);
    }
  };

  if (!cwd.empty()) keep_directory(cwd);
  // A build environment: argv[0] is <venv>/bin/python..., beside <venv>/pyvenv.cfg.
  if (!argv.empty()) {
    const fs::path exe = fs::path(argv[0]).lexically_normal();
    const fs::path venv = exe.parent_path().parent_path();
    std::error_code e;
    if (exe.is_absolute() && exe.parent_path().filename() == "bin" && fs::is_regular_file(venv / "pyvenv.cfg", e)) {
      keep_directory(venv);
    }
  }
  for (std::size_t i = 1; i < argv.size(); ++i) {
    for (const auto& name : tmp_paths_in(argv[i], root)) named(name);
  }
  // pyproject_hooks (pip): `python .../_in_process.py HOOK CONTROL_DIR`, the hook's arguments in
  // CONTROL_DIR/input.json.
  if (argv.size() >= 4 && fs::path(argv[1]).filename() == "_in_process.py") {
    const fs::path control = argv[3];
    std::error_code e;
    const fs::path real = fs::canonical(control, e);
    if (!e && strictly_beneath(real.string(), root)) {
      for (const auto& name : tmp_paths_in(read_bounded((real / "input.json").string()), root)) named(name);
    }
  }
  for (const auto& entry : environment) {
    for (const char* name : {"PIP_BUILD_TRACKER=", "PIP_REQ_TRACKER="}) {
      const std::string_view prefix(name);
      if (entry.compare(0, prefix.size(), prefix) == 0 && !entry.compare(prefix.size(), root.size() + 1, root + "/")) {
        named(entry.substr(prefix.size()));
      }
    }
  }
  return out;
}

std::vector<std::string> build_writable_devices() {
  return {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"};
}

std::vector<std::string> build_writable_device_dirs() { return {"/dev/shm", "/dev/pts"}; }

}  // namespace engine::deps
