#include "mcp/cli.h"

// g++ 12 reports a false "potential null pointer dereference" inside CLI11's inlined string
// splitting (CLI/StringTools.hpp); it is not in our code and cannot be fixed from here.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <CLI/CLI.hpp>

#include "engine/environments/installer.h"
#include "mcp/server_info.h"
#include "sandbox/policy.h"

namespace mcp {

namespace {

// A bad value; the message already names the flag.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t min,
                           std::int64_t max) {
  std::int64_t value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  const std::string range = max == std::numeric_limits<std::int64_t>::max()
                                ? ">= " + std::to_string(min)
                                : "between " + std::to_string(min) + " and " + std::to_string(max);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    throw UsageError(flag + ": expected an integer " + range + ", got '" + text + "'");
  }
  return value;
}

bool is_module_name(std::string_view name) {
  bool at_start = true;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '.') {
      if (at_start) return false;
      at_start = true;
      continue;
    }
    if (!(std::isalpha(u) || c == '_' || (!at_start && std::isdigit(u)))) return false;
    at_start = false;
  }
  return !name.empty() && !at_start;
}

void require_plain_text(const std::string& flag, const std::string& value) {
  if (value.empty()) throw UsageError(flag + ": must not be empty");
  for (char c : value) {
    if (std::iscntrl(static_cast<unsigned char>(c))) {
      throw UsageError(flag + ": must not contain control characters");
    }
  }
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

// --host: an IPv4 or IPv6 literal, or "localhost". Sets whether it is a loopback address.
std::string parse_host(const std::string& host, bool& loopback) {
  if (host == "localhost") {
    loopback = true;
    return "127.0.0.1";
  }
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    loopback = (ntohl(v4.s_addr) >> 24) == 127;
    return host;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    loopback = IN6_IS_ADDR_LOOPBACK(&v6);
    return host;
  }
  throw UsageError("--host: expected an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1) or localhost, got '" +
                   host + "'");
}

// The bearer token: the file's content without surrounding whitespace; visible ASCII only.
std::string read_token(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  if (!file) throw UsageError("--auth-token-file: cannot read '" + path + "'");
  std::string token = content.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw UsageError("--auth-token-file: '" + path + "' is empty");
  token = token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      throw UsageError("--auth-token-file: the token must be one word of visible ASCII characters");
    }
  }
  if (token.size() < 16) {
    throw UsageError("--auth-token-file: the token has " + std::to_string(token.size()) +
                     " characters; use at least 16 (e.g. openssl rand -hex 32 > FILE)");
  }
  return token;
}

}  // namespace

CliResult parse_cli(const std::vector<std::string>& args) {
  CLI::App app{"MCP server (stdio or Streamable HTTP) that runs untrusted Python in a sandbox, each run forked from "
               "a pre-warmed interpreter.",
               std::string(kServerName)};
  app.set_help_flag("-h,--help", "Print this help and exit");

  std::string python_version, backend = "native", max_timeout = "300", default_timeout = "30",
              max_output = "102400", uv_path = "uv", log_level = "info", max_concurrent,
              network = "on", memory_mb, max_processes, cpu_seconds, tmpfs_mb, cache_dir,
              env_cache_mb, max_zygotes, zygote_idle, max_images, index_url, run_file,
              transport = "stdio", host = "127.0.0.1", port = "8000", token_file,
              max_connections, read_timeout, max_sessions, session_idle, session_snapshots,
              max_output_file_bytes, docker_image, docker_path = "docker";
  std::vector<std::string> preload, extra_index_urls, find_links;
  bool no_warm_cache = false, offline = false, version = false, allow_unauthenticated = false;

  app.add_option("--python-version", python_version,
                 "CPython X.Y that runs scripts (default: the default interpreter's, "
                 "Debian's /usr/bin/python3 when present)");
  app.add_option("--sandbox-backend", backend, "native | docker | none (default: native)");
  app.add_option("--docker-image", docker_image,
                 "docker backend: the image zygotes run in (default: mcp-python-exec-sandbox:bookworm, "
                 "built by scripts/build-image.sh)");
  app.add_option("--docker-path", docker_path, "docker backend: the docker or podman client (default: docker)");
  app.add_option("--max-timeout", max_timeout, "Largest timeout_seconds a call may ask for (default: 300)");
  app.add_option("--default-timeout", default_timeout, "timeout_seconds when a call gives none (default: 30)");
  app.add_option("--max-output-bytes", max_output,
                 "Bytes kept per stream (stdout, stderr); head and tail survive (default: 102400)");
  app.add_flag("--no-warm-cache", no_warm_cache, "Do not warm the interpreter and package cache at start");
  app.add_option("--uv-path", uv_path, "uv executable used to install dependencies (default: uv)");
  app.add_option("--log-level", log_level,
                 "stderr log level: trace, debug, info, warn, error, critical, off (default: info)");
  app.add_flag("--version", version, "Print the version and exit");
  app.add_option("--preload", preload,
                 "Module the warm interpreter imports up front (repeatable, or comma-separated)")
      ->delimiter(',');
  app.add_option("--max-concurrent-runs", max_concurrent,
                 "Runs executing at once; more are queued (default: 2 x cores)");
  app.add_option("--network", network, "Network access for scripts: on | off (default: on)");
  app.add_option("--memory-limit-mb", memory_mb, "Memory limit per run in MiB (default: 1024)");
  app.add_option("--max-processes", max_processes, "Processes/threads per run (default: 128)");
  app.add_option("--cpu-limit-seconds", cpu_seconds,
                 "CPU seconds per run; 0 = the run's timeout (default: 0)");
  app.add_option("--tmpfs-size-mb", tmpfs_mb, "Size of each run's work dir and /tmp in MiB (default: 256)");
  app.add_option("--cache-dir", cache_dir,
                 "Where environments are cached (default: $XDG_CACHE_HOME/mcp-python-exec-sandbox, else "
                 "~/.cache/mcp-python-exec-sandbox)");
  app.add_option("--env-cache-max-mb", env_cache_mb, "Size cap of the environment cache in MiB (default: 4096)");
  app.add_option("--max-zygotes", max_zygotes, "Warm interpreters kept at once, LRU (default: 4)");
  app.add_option("--zygote-idle-seconds", zygote_idle,
                 "A warm interpreter other than the default one stops after this long unused "
                 "(default: 600)");
  app.add_option("--max-images", max_images, "Figures returned per run (default: 4)");
  app.add_option("--max-sessions", max_sessions,
                 "Sessions (create_session, fork_session) that may exist at once, all clients together "
                 "(default: 8)");
  app.add_option("--session-idle-seconds", session_idle,
                 "A session unused for this long is closed (default: 900)");
  app.add_option("--session-snapshots", session_snapshots,
                 "Steps of each session kept for reset_session and fork_session, besides step 0 "
                 "(default: 8)");
  app.add_option("--max-output-file-bytes", max_output_file_bytes,
                 "Bytes of output_files returned per call, all files together (default: 10485760)");
  app.add_option("--index-url", index_url, "Package index URL for installs");
  app.add_option("--extra-index-url", extra_index_urls, "Additional package index URL (repeatable)");
  app.add_option("--find-links", find_links, "Extra place to find packages (repeatable)");
  app.add_flag("--offline", offline, "Install only from caches and --find-links, never the network");
  app.add_option("--transport", transport, "stdio | http (default: stdio)");
  app.add_option("--host", host,
                 "HTTP: address to listen on, an IP address or localhost (default: 127.0.0.1)");
  app.add_option("--port", port, "HTTP: port to listen on; 0 = any free port (default: 8000)");
  app.add_option("--auth-token-file", token_file,
                 "HTTP: file holding the bearer token every request must carry "
                 "(Authorization: Bearer TOKEN); required to listen beyond loopback");
  app.add_flag("--allow-unauthenticated", allow_unauthenticated,
               "HTTP: listen beyond loopback without a token (anyone who reaches the port can "
               "run code)");
  app.add_option("--max-connections", max_connections,
                 "HTTP: connections open at once; more wait to be accepted (default: 256)");
  app.add_option("--http-read-timeout", read_timeout,
                 "HTTP: seconds to receive one request, headers and body; also closes idle "
                 "connections (default: 30)");
  app.add_option("--run", run_file,
                 "Run FILE once through the sandbox, print the result and exit with its exit code "
                 "(no MCP)");

  // As the Python server's argparse does: a flag given twice keeps its last value; the
  // repeatable ones accumulate.
  for (CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name();
    if (name == "--preload" || name == "--extra-index-url" || name == "--find-links") continue;
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }

  CliResult result;
  std::vector<const char*> argv;
  argv.push_back(kServerName.data());
  for (const auto& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    result.stdout_text = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    result.exit_code = 2;
    result.stderr_text =
        std::string(kServerName) + ": error: " + one_line(e.what()) + " (see --help)";
    return result;
  }
  if (version) {
    result.stdout_text = std::string(kServerName) + " " + std::string(server_version()) + "\n";
    return result;
  }

  try {
    CliOptions options;
    auto& config = options.engine;
    if (app.count("--python-version") != 0) {
      const auto dot = python_version.find('.');
      const bool shape = dot != std::string::npos && python_version.find('.', dot + 1) == std::string::npos;
      std::int64_t major = 0, minor = 0;
      try {
        if (!shape) throw UsageError("");
        major = parse_integer("", python_version.substr(0, dot), 0, 99);
        minor = parse_integer("", python_version.substr(dot + 1), 0, 999);
      } catch (const UsageError&) {
        throw UsageError("--python-version: expected X.Y (e.g. 3.12), got '" + python_version + "'");
      }
      if (major != 3 || minor < 9) {
        throw UsageError("--python-version: CPython 3.9 or later is required, got '" +
                         python_version + "'");
      }
      config.python_version = python_version;
    }
    const auto parsed_backend = sandbox::parse_backend(backend);
    if (!parsed_backend) {
      throw UsageError("--sandbox-backend: expected native, docker or none, got '" + backend + "'");
    }
    config.policy.backend = *parsed_backend;
    if (app.count("--docker-image") != 0) {
      require_plain_text("--docker-image", docker_image);
      if (docker_image.empty() || docker_image.front() == '-') {
        throw UsageError("--docker-image: expected an image name, got '" + docker_image + "'");
      }
      config.docker_image = docker_image;
    }
    require_plain_text("--docker-path", docker_path);
    if (docker_path.empty()) throw UsageError("--docker-path: expected docker, podman or a path");
    config.docker_path = docker_path;
    config.max_timeout_seconds = static_cast<int>(parse_integer("--max-timeout", max_timeout, 1, kIntMax));
    config.default_timeout_seconds = static_cast<int>(
        parse_integer("--default-timeout", default_timeout, 1, config.max_timeout_seconds));
    config.max_output_bytes = static_cast<std::size_t>(
        parse_integer("--max-output-bytes", max_output, 1024, std::int64_t{1} << 30));
    config.warm_cache = !no_warm_cache;
    require_plain_text("--uv-path", uv_path);
    config.uv_path = uv_path;

    static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "warning",
                                                   "error", "critical", "off"};
    bool level_ok = false;
    for (auto level : kLevels) level_ok = level_ok || level == log_level;
    if (!level_ok) {
      throw UsageError("--log-level: expected trace, debug, info, warn, error, critical or off, got '" +
                       log_level + "'");
    }
    options.log_level = log_level == "warning" ? "warn" : log_level;

    for (const auto& module : preload) {
      if (!is_module_name(module)) {
        throw UsageError("--preload: '" + module + "' is not a Python module name");
      }
    }
    config.preload_modules = preload;
    if (!max_concurrent.empty()) {
      config.max_concurrent_runs =
          static_cast<unsigned>(parse_integer("--max-concurrent-runs", max_concurrent, 1, 4096));
    }
    if (network == "on") {
      config.policy.network = true;
    } else if (network == "off") {
      config.policy.network = false;
    } else {
      throw UsageError("--network: expected on or off, got '" + network + "'");
    }
    auto& limits = config.policy.limits;
    if (!memory_mb.empty()) {
      limits.memory_bytes =
          static_cast<std::uint64_t>(parse_integer("--memory-limit-mb", memory_mb, 32, 1 << 24)) << 20;
    }
    if (!max_processes.empty()) {
      limits.max_processes =
          static_cast<std::uint32_t>(parse_integer("--max-processes", max_processes, 1, 1 << 20));
    }
    if (!cpu_seconds.empty()) {
      limits.cpu_seconds =
          static_cast<std::uint32_t>(parse_integer("--cpu-limit-seconds", cpu_seconds, 0, kIntMax));
    }
    if (!tmpfs_mb.empty()) {
      limits.tmpfs_bytes =
          static_cast<std::uint64_t>(parse_integer("--tmpfs-size-mb", tmpfs_mb, 1, 1 << 24)) << 20;
    }
    if (app.count("--cache-dir") != 0) {
      require_plain_text("--cache-dir", cache_dir);
      config.cache_dir = cache_dir;
    }
    if (!env_cache_mb.empty()) {
      config.env_cache_max_mb =
          static_cast<std::uint64_t>(parse_integer("--env-cache-max-mb", env_cache_mb, 1, kIntMax));
    }
    if (!max_zygotes.empty()) {
      config.max_zygotes = static_cast<unsigned>(parse_integer("--max-zygotes", max_zygotes, 1, 64));
    }
    if (!zygote_idle.empty()) {
      config.zygote_idle_seconds =
          static_cast<unsigned>(parse_integer("--zygote-idle-seconds", zygote_idle, 1, 86400 * 7));
    }
    if (!max_images.empty()) {
      config.max_images = static_cast<unsigned>(parse_integer("--max-images", max_images, 0, 64));
    }
    if (!max_sessions.empty()) {
      config.max_sessions = static_cast<unsigned>(parse_integer("--max-sessions", max_sessions, 0, 1024));
    }
    if (!session_idle.empty()) {
      config.session_idle_seconds =
          static_cast<unsigned>(parse_integer("--session-idle-seconds", session_idle, 1, 86400 * 7));
    }
    if (!session_snapshots.empty()) {
      config.session_snapshots =
          static_cast<unsigned>(parse_integer("--session-snapshots", session_snapshots, 1, 1000));
    }
    if (!max_output_file_bytes.empty()) {
      config.max_output_file_bytes = static_cast<std::uint64_t>(
          parse_integer("--max-output-file-bytes", max_output_file_bytes, 0, std::int64_t{1} << 30));
    }
    if (app.count("--index-url") != 0) {
      require_plain_text("--index-url", index_url);
      config.index.index_url = index_url;
    }
    for (const auto& url : extra_index_urls) require_plain_text("--extra-index-url", url);
    config.index.extra_index_urls = extra_index_urls;
    for (const auto& link : find_links) require_plain_text("--find-links", link);
    config.index.find_links = find_links;
    config.index.offline = offline;
    // Started as root, the server runs the installer sandboxed as nobody: a find-links directory
    // private to root would fail every install with a bare "Permission denied".
    if (::geteuid() == 0 && config.policy.backend != sandbox::Backend::none) {
      const std::string problem = engine::deps::find_links_access_problem(
          config.index.find_links, engine::deps::InstallerOptions{}.unprivileged_uid);
      if (!problem.empty()) throw UsageError(problem);
    }

    if (transport == "http") {
      options.transport = Transport::http;
    } else if (transport != "stdio") {
      throw UsageError("--transport: expected stdio or http, got '" + transport + "'");
    }
    for (const char* flag : {"--host", "--port", "--auth-token-file", "--allow-unauthenticated",
                             "--max-connections", "--http-read-timeout"}) {
      if (app.count(flag) != 0 && options.transport != Transport::http) {
        throw UsageError(std::string(flag) + ": only with --transport http");
      }
    }
    auto& http = options.http;
    http.host = parse_host(host, http.loopback);
    http.port = static_cast<std::uint16_t>(parse_integer("--port", port, 0, 65535));
    if (app.count("--auth-token-file") != 0) {
      require_plain_text("--auth-token-file", token_file);
      http.auth_token = read_token(token_file);
    }
    http.allow_unauthenticated = allow_unauthenticated;
    if (!max_connections.empty()) {
      http.max_connections =
          static_cast<unsigned>(parse_integer("--max-connections", max_connections, 1, 65536));
      http.max_connections_given = true;
    }
    if (!read_timeout.empty()) {
      http.read_timeout_seconds =
          static_cast<unsigned>(parse_integer("--http-read-timeout", read_timeout, 1, 3600));
    }
    if (options.transport == Transport::http && !http.loopback && !http.auth_token &&
        !http.allow_unauthenticated) {
      throw UsageError("--host: " + http.host +
                       " is not a loopback address and this server runs code for whoever reaches "
                       "it; give --auth-token-file FILE (clients send Authorization: Bearer "
                       "TOKEN), or --allow-unauthenticated if something in front of it "
                       "authenticates");
    }

    if (app.count("--run") != 0) {
      if (options.transport == Transport::http) throw UsageError("--run: not with --transport http");
      require_plain_text("--run", run_file);
      // A regular file, readable, of a script's size: not a directory, a device or a FIFO
      // (read forever, or never).
      struct stat st {};
      if (::stat(run_file.c_str(), &st) != 0) {
        throw UsageError("--run: cannot read '" + run_file + "': " + std::strerror(errno));
      }
      if (!S_ISREG(st.st_mode)) throw UsageError("--run: '" + run_file + "' is not a regular file");
      if (::access(run_file.c_str(), R_OK) != 0) {
        throw UsageError("--run: cannot read '" + run_file + "': " + std::strerror(errno));
      }
      if (static_cast<std::uint64_t>(st.st_size) > kMaxRunFileBytes) {
        throw UsageError("--run: '" + run_file + "' is " + std::to_string(st.st_size) +
                         " bytes; a script may be at most 16 MiB");
      }
      options.run_file = run_file;
    }
    result.options = std::move(options);
  } catch (const UsageError& e) {
    result.exit_code = 2;
    result.stderr_text = std::string(kServerName) + ": error: " + e.what();
  }
  return result;
}

}  // namespace mcp
