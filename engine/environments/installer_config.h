// How the user's own uv or pip configuration reaches a sandboxed installer. An installer run by
// the server must reach the index the way the user's uv or pip does from their shell: the same
// TLS roots, proxies, index addresses, timeouts and configuration files. Passed through:
//   - TLS and proxies (both installers): SSL_CERT_FILE, SSL_CERT_DIR, REQUESTS_CA_BUNDLE,
//     http_proxy, https_proxy, all_proxy, no_proxy (either case);
//   - uv: UV_INDEX* (UV_INDEX, UV_INDEX_URL, UV_INDEX_STRATEGY, UV_INDEX_<NAME>_USERNAME/PASSWORD),
//     UV_DEFAULT_INDEX, UV_EXTRA_INDEX_URL, UV_FIND_LINKS, UV_NATIVE_TLS, UV_SYSTEM_CERTS,
//     UV_INSECURE_HOST, UV_HTTP_TIMEOUT, UV_REQUEST_TIMEOUT, UV_HTTP_RETRIES, UV_OFFLINE,
//     UV_CONCURRENT_DOWNLOADS/BUILDS/INSTALLS, UV_PRERELEASE, UV_RESOLUTION, UV_EXCLUDE_NEWER,
//     UV_NO_CONFIG, UV_CONFIG_FILE; and uv.toml as uv finds it (UV_CONFIG_FILE, else the user's
//     $XDG_CONFIG_HOME/uv/uv.toml or ~/.config/uv/uv.toml, and the system's
//     $XDG_CONFIG_DIRS/uv/uv.toml and /etc/uv/uv.toml);
//   - pip: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, PIP_TRUSTED_HOST,
//     PIP_CERT, PIP_CLIENT_CERT, PIP_PROXY, PIP_TIMEOUT, PIP_DEFAULT_TIMEOUT, PIP_RETRIES,
//     PIP_CONSTRAINT, PIP_PRE; and pip.conf as pip finds it (PIP_CONFIG_FILE, the site files
//     $XDG_CONFIG_DIRS/pip/pip.conf and /etc/pip.conf, the user's $XDG_CONFIG_HOME/pip/pip.conf
//     or ~/.config/pip/pip.conf; the legacy ~/.pip/pip.conf is not read).
// Local files and directories these values name (a CA bundle, a find-links directory, a
// file:// index, a constraints file) are mounted read-only at their own place, so that they
// mean inside the sandbox what they mean outside. Nothing else of the server's environment
// reaches the installer. The server's own flags (--index-url, --extra-index-url, --find-links,
// --offline) are passed on the command line and override all of this.
// Pure except for reading the named files (stat, and the configuration files' text).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace engine::deps {

enum class InstallerKind { uv, pip };

// An environment as "NAME=value" entries.
using Environ = std::vector<std::string>;
// The server's own environment.
Environ process_environment();

// Whether the server's variable `name` reaches an installer of this kind.
bool passes_to_installer(InstallerKind kind, std::string_view name);

// The local paths named in `text` (a variable's value or a configuration file): absolute paths
// and file:// URLs, separated by whitespace, commas, quotes, brackets or "name=" prefixes. Only
// what exists on this host, never "/" nor anything under /proc, /sys or /dev. A local index's
// directory named "simple" stands for its parent, where the files its pages link to live.
std::vector<std::string> local_paths_in(std::string_view text);

// The configuration files this installer would read for the user with this environment, where
// they exist (most general first).
std::vector<std::string> installer_config_files(InstallerKind kind, const Environ& env);

struct InstallerPassthrough {
  std::vector<std::string> env;         // NAME=value entries to add to the installer's environment
  std::vector<std::string> host_paths;  // to mount read-only at their own place
};

// What of the user's configuration the installer gets: the passed variables (with
// XDG_CONFIG_HOME pointing at the user's configuration directory when the user's own file is
// used, since the sandbox's $HOME is empty), the configuration files, and the local paths both
// name.
InstallerPassthrough installer_passthrough(InstallerKind kind, const Environ& env);

// One digest of what of the user's configuration reaches either installer (uv's and pip's passed
// variables and the contents of their configuration files): equal while nothing of it changes.
std::string installer_configuration_digest(const Environ& env);

// When the installer runs as another uid than the server's (the server is root; it runs as
// `installer_uid`), a local --find-links directory (or file) it cannot read: what to do about it,
// naming the path; "" when every one is readable by others (or is a URL, or missing: the
// installer then says so itself).
std::string find_links_access_problem(const std::vector<std::string>& find_links, unsigned installer_uid);

}  // namespace engine::deps
