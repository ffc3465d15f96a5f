#include "engine/environments/installer_config.h"

#include "engine/environments/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <array>
#include <filesystem>
#include <optional>

#include "sandbox/read_file.h"

extern char** environ;

namespace engine::deps {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> lookup(const Environ& env, std::string_view name) {
  for (const auto& entry : env) {
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.compare(0, name.size(), name) == 0) {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// Set to something other than "", "0" or "false".
bool truthy(const std::optional<std::string>& value) {
  return value && !value->empty() && *value != "0" && *value != "false";
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool under(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// $XDG_CONFIG_HOME, else ~/.config; "" when neither is known.
std::string user_config_home(const Environ& env) {
  if (auto xdg = lookup(env, "XDG_CONFIG_HOME"); xdg && !xdg->empty() && (*xdg)[0] == '/') return *xdg;
  if (auto home = lookup(env, "HOME"); home && !home->empty() && (*home)[0] == '/') return *home + "/.config";
  return {};
}

std::vector<std::string> system_config_dirs(const Environ& env) {
  auto dirs = lookup(env, "XDG_CONFIG_DIRS");
  std::vector<std::string> out;
  for (auto& dir : split(dirs && !dirs->empty() ? *dirs : std::string("/etc/xdg"), ':')) {
    if (!dir.empty() && dir[0] == '/') out.push_back(dir);
  }
  return out;
}

constexpr std::array kCommonVariables = {
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "http_proxy", "https_proxy", "all_proxy",
    "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"};
constexpr std::array kUvVariables = {
    "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "UV_NATIVE_TLS", "UV_SYSTEM_CERTS",
    "UV_INSECURE_HOST", "UV_HTTP_TIMEOUT", "UV_REQUEST_TIMEOUT", "UV_HTTP_RETRIES", "UV_OFFLINE",
    "UV_CONCURRENT_DOWNLOADS", "UV_CONCURRENT_BUILDS", "UV_CONCURRENT_INSTALLS", "UV_PRERELEASE",
    "UV_RESOLUTION", "UV_EXCLUDE_NEWER", "UV_NO_CONFIG", "UV_CONFIG_FILE"};
constexpr std::array kPipVariables = {
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TRUSTED_HOST",
    "PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_TIMEOUT", "PIP_DEFAULT_TIMEOUT", "PIP_RETRIES",
    "PIP_CONSTRAINT", "PIP_PRE"};

template <std::size_t N>
bool listed(const std::array<const char*, N>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

std::string read_text(const std::string& path) { return sandbox::read_file(path).value_or("").substr(0, 1 << 20); }

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

Environ process_environment() {
  Environ env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

bool passes_to_installer(InstallerKind kind, std::string_view name) {
  if (listed(kCommonVariables, name)) return true;
  if (kind == InstallerKind::uv) return name.substr(0, 8) == "UV_INDEX" || listed(kUvVariables, name);
  return listed(kPipVariables, name);
}

std::vector<std::string> local_paths_in(std::string_view text) {
  std::vector<std::string> out;
  auto separator = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '"' || c == '\'' ||
           c == '[' || c == ']' || c == '{' || c == '}' || c == '=' || c == ';';
  };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    std::size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    std::string_view token = text.substr(i, end - i);
    i = end;
    if (token.substr(0, 7) == "file://") token.remove_prefix(7);
    if (token.empty() || token[0] != '/') continue;
    std::string path = fs::path(token).lexically_normal().string();
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path == "/" || under(path, "/proc") || under(path, "/sys") || under(path, "/dev")) continue;
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    // A local package index (PEP 503: a directory named "simple") links its files relatively,
    // usually to a sibling such as ../../packages/: the index's root is what the installer reads.
    if (fs::path(path).filename() == "simple" && fs::is_directory(path, ec)) {
      path = fs::path(path).parent_path().string();
      if (path == "/") continue;
    }
    add_unique(out, path);
  }
  return out;
}

std::vector<std::string> installer_config_files(InstallerKind kind, const Environ& env) {
  std::vector<std::string> files;
  auto want = [&files](const std::string& path) {
    if (is_file(path)) add_unique(files, path);
  };
  const std::string home = user_config_home(env);
  if (kind == InstallerKind::uv) {
    // An explicit file replaces discovery; UV_NO_CONFIG turns discovery off.
    if (auto file = lookup(env, "UV_CONFIG_FILE"); file && !file->empty()) {
      want(*file);
      return files;
    }
    if (truthy(lookup(env, "UV_NO_CONFIG"))) return files;
    for (const auto& dir : system_config_dirs(env)) want(dir + "/uv/uv.toml");
    want("/etc/uv/uv.toml");
    if (!home.empty()) want(home + "/uv/uv.toml");
    return files;
  }
  auto explicit_file = lookup(env, "PIP_CONFIG_FILE");
  if (explicit_file && *explicit_file == "/dev/null") return files;  // pip: no configuration at all
  for (const auto& dir : system_config_dirs(env)) want(dir + "/pip/pip.conf");
  want("/etc/pip.conf");
  if (!home.empty()) want(home + "/pip/pip.conf");
  if (explicit_file && !explicit_file->empty()) want(*explicit_file);
  return files;
}

InstallerPassthrough installer_passthrough(InstallerKind kind, const Environ& env) {
  InstallerPassthrough pass;
  for (const auto& entry : env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = entry.substr(0, eq);
    if (!passes_to_installer(kind, name)) continue;
    pass.env.push_back(entry);
    for (auto& path : local_paths_in(std::string_view(entry).substr(eq + 1))) add_unique(pass.host_paths, path);
  }
  const auto files = installer_config_files(kind, env);
  const std::string home = user_config_home(env);
  bool user_file = false;
  for (const auto& file : files) {
    add_unique(pass.host_paths, file);
    for (auto& path : local_paths_in(read_text(file))) add_unique(pass.host_paths, path);
    if (!home.empty() && under(file, home)) user_file = true;
  }
  // The sandbox's $HOME is an empty tmpfs: the user's files are found where they really are.
  if (user_file) pass.env.push_back("XDG_CONFIG_HOME=" + home);
  if (auto dirs = lookup(env, "XDG_CONFIG_DIRS"); dirs && !files.empty()) {
    pass.env.push_back("XDG_CONFIG_DIRS=" + *dirs);
  }
  if (kind == InstallerKind::pip) {
    if (auto file = lookup(env, "PIP_CONFIG_FILE"); file && !file->empty()) {
      pass.env.push_back("PIP_CONFIG_FILE=" + *file);
    }
  }
  return pass;
}

std::string installer_configuration_digest(const Environ& env) {
  std::string material;
  for (const auto kind : {InstallerKind::uv, InstallerKind::pip}) {
    auto pass = installer_passthrough(kind, env);
    std::sort(pass.env.begin(), pass.env.end());
    for (const auto& entry : pass.env) material += entry + '\n';
    for (const auto& file : installer_config_files(kind, env)) material += file + '\n' + read_text(file) + '\n';
    material += '\f';
  }
  return sha256_hex(material);
}

std::string find_links_access_problem(const std::vector<std::string>& find_links, unsigned installer_uid) {
  auto problem = [installer_uid](const std::string& path, const struct stat& st, const char* fix) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "--find-links " + path + ": the installer runs as uid " + std::to_string(installer_uid) +
           " when the server runs as root, and cannot read it (mode " + mode + ", owner uid " +
           std::to_string(st.st_uid) + "); make it readable by others (" + fix +
           ") or serve the packages from a directory that is";
  };
  for (const auto& link : find_links) {
    std::string path = link;
    if (path.rfind("file://", 0) == 0) path = path.substr(7);
    if (path.find("://") != std::string::npos || path.empty()) continue;
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if ((st.st_mode & 05) != 05) return problem(path, st, ("chmod o+rx " + path).c_str());
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        struct stat est{};
        if (::stat(entry.path().c_str(), &est) == 0 && S_ISREG(est.st_mode) && (est.st_mode & 04) == 0) {
          return problem(entry.path().string(), est, ("chmod o+r " + path + "/*").c_str());
        }
      }
    } else if ((st.st_mode & 04) == 0) {
      return problem(path, st, ("chmod o+r " + path).c_str());
    }
  }
  return {};
}

}  // namespace engine::deps
