// Command-line parsing: drop-in flags, engine knobs, and exit status 2 with one line on errors.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "mcp/cli.h"

namespace {

mcp::CliResult parse(std::vector<std::string> args) { return mcp::parse_cli(args); }

// Expects a usage error naming `flag`, on one line.
void expect_usage_error(std::vector<std::string> args, const std::string& flag) {
  INFO("args: " << [&] {
    std::string s;
    for (const auto& a : args) s += a + " ";
    return s;
  }());
  const auto result = parse(args);
  CHECK_FALSE(result.options.has_value());
  CHECK(result.exit_code == 2);
  CHECK(result.stderr_text.find(flag) != std::string::npos);
  CHECK(result.stderr_text.find('\n') == std::string::npos);
  CHECK(result.stdout_text.empty());
}

}  // namespace

TEST_CASE("defaults match the Python server") {
  const auto result = parse({});
  REQUIRE(result.options.has_value());
  const auto& config = result.options->engine;
  CHECK_FALSE(config.python_version.has_value());
  CHECK(config.policy.backend == sandbox::Backend::native);
  CHECK(config.max_timeout_seconds == 300);
  CHECK(config.default_timeout_seconds == 30);
  CHECK(config.max_output_bytes == 102400);
  CHECK(config.warm_cache);
  CHECK(config.uv_path == "uv");
  CHECK(config.policy.network);
  CHECK(config.max_concurrent_runs == 0);
  CHECK_FALSE(result.options->run_file.has_value());
  CHECK(result.options->log_level == "info");
}

TEST_CASE("the docker backend's flags reach the engine configuration") {
  const auto defaults = parse({"--sandbox-backend", "docker"});
  REQUIRE(defaults.options.has_value());
  CHECK(defaults.options->engine.policy.backend == sandbox::Backend::docker);
  CHECK(defaults.options->engine.docker_path == "docker");
  CHECK(defaults.options->engine.docker_image.empty());  // the engine's default image
  const auto given = parse({"--sandbox-backend", "docker", "--docker-image", "registry.example/py:3.12",
                            "--docker-path", "/usr/bin/podman"});
  REQUIRE(given.options.has_value());
  CHECK(given.options->engine.docker_image == "registry.example/py:3.12");
  CHECK(given.options->engine.docker_path == "/usr/bin/podman");
  CHECK_FALSE(parse({"--docker-image", "--rm"}).options.has_value());
  CHECK_FALSE(parse({"--docker-path", ""}).options.has_value());
}

TEST_CASE("every flag reaches the engine configuration") {
  const auto result = parse({"--python-version", "3.12", "--sandbox-backend", "none",
                             "--max-timeout", "600", "--default-timeout=45",
                             "--max-output-bytes", "2048", "--no-warm-cache", "--uv-path",
                             "/opt/uv", "--log-level", "warning", "--preload", "numpy",
                             "--preload", "pandas,json.decoder", "--max-concurrent-runs", "3",
                             "--network", "off", "--memory-limit-mb", "512",
                             "--max-processes", "64", "--cpu-limit-seconds", "10",
                             "--tmpfs-size-mb", "128", "--cache-dir", "/tmp/c",
                             "--env-cache-max-mb", "100", "--max-zygotes", "2", "--zygote-idle-seconds", "30",
                             "--max-images", "0", "--index-url", "https://i.example/simple",
                             "--extra-index-url", "https://a.example", "--extra-index-url",
                             "https://b.example", "--find-links", "/wheels", "--offline"});
  REQUIRE(result.options.has_value());
  const auto& c = result.options->engine;
  CHECK(c.python_version == std::optional<std::string>("3.12"));
  CHECK(c.policy.backend == sandbox::Backend::none);
  CHECK(c.max_timeout_seconds == 600);
  CHECK(c.default_timeout_seconds == 45);
  CHECK(c.max_output_bytes == 2048);
  CHECK_FALSE(c.warm_cache);
  CHECK(c.uv_path == "/opt/uv");
  CHECK(result.options->log_level == "warn");
  CHECK(c.preload_modules == std::vector<std::string>{"numpy", "pandas", "json.decoder"});
  CHECK(c.max_concurrent_runs == 3);
  CHECK_FALSE(c.policy.network);
  CHECK(c.policy.limits.memory_bytes == 512ull << 20);
  CHECK(c.policy.limits.max_processes == 64);
  CHECK(c.policy.limits.cpu_seconds == 10);
  CHECK(c.policy.limits.tmpfs_bytes == 128ull << 20);
  CHECK(c.cache_dir == "/tmp/c");
  CHECK(c.env_cache_max_mb == 100);
  CHECK(c.max_zygotes == 2);
  CHECK(c.zygote_idle_seconds == 30);
  CHECK(c.max_images == 0);
  CHECK(c.index.index_url == std::optional<std::string>("https://i.example/simple"));
  CHECK(c.index.extra_index_urls == std::vector<std::string>{"https://a.example", "https://b.example"});
  CHECK(c.index.find_links == std::vector<std::string>{"/wheels"});
  CHECK(c.index.offline);
}

TEST_CASE("a flag given twice keeps the last value, as the Python server's argparse does") {
  const auto result = parse({"--python-version", "3.11", "--python-version", "3.12", "--max-timeout", "100",
                             "--max-timeout", "200", "--uv-path", "/a/uv", "--uv-path", "/b/uv",
                             "--no-warm-cache", "--no-warm-cache", "--find-links", "/w1", "--find-links", "/w2",
                             "--extra-index-url", "https://a.example", "--extra-index-url", "https://b.example"});
  REQUIRE(result.options.has_value());
  const auto& c = result.options->engine;
  CHECK(c.python_version == std::optional<std::string>("3.12"));
  CHECK(c.max_timeout_seconds == 200);
  CHECK(c.uv_path == "/b/uv");
  CHECK_FALSE(c.warm_cache);
  // The repeatable ones still accumulate.
  CHECK(c.index.find_links == std::vector<std::string>{"/w1", "/w2"});
  CHECK(c.index.extra_index_urls == std::vector<std::string>{"https://a.example", "https://b.example"});
}

TEST_CASE("invalid values exit 2 with one line naming the flag") {
  expect_usage_error({"--max-timeout", "0"}, "--max-timeout");
  expect_usage_error({"--max-timeout", "ten"}, "--max-timeout");
  expect_usage_error({"--max-timeout", "99999999999999999999"}, "--max-timeout");
  expect_usage_error({"--default-timeout", "0"}, "--default-timeout");
  expect_usage_error({"--default-timeout", "301"}, "--default-timeout");
  expect_usage_error({"--max-timeout", "10", "--default-timeout", "11"}, "--default-timeout");
  expect_usage_error({"--max-output-bytes", "1023"}, "--max-output-bytes");
  expect_usage_error({"--sandbox-backend", "chroot"}, "--sandbox-backend");
  expect_usage_error({"--python-version", "3"}, "--python-version");
  expect_usage_error({"--python-version", "3.8"}, "--python-version");
  expect_usage_error({"--python-version", "three.twelve"}, "--python-version");
  expect_usage_error({"--log-level", "loud"}, "--log-level");
  expect_usage_error({"--network", "maybe"}, "--network");
  expect_usage_error({"--preload", "os; import shutil"}, "--preload");
  expect_usage_error({"--preload", "1abc"}, "--preload");
  expect_usage_error({"--memory-limit-mb", "-5"}, "--memory-limit-mb");
  expect_usage_error({"--max-processes", "0"}, "--max-processes");
  expect_usage_error({"--max-concurrent-runs", "0"}, "--max-concurrent-runs");
  expect_usage_error({"--max-zygotes", "0"}, "--max-zygotes");
  expect_usage_error({"--zygote-idle-seconds", "0"}, "--zygote-idle-seconds");
  expect_usage_error({"--max-images", "-1"}, "--max-images");
  expect_usage_error({"--tmpfs-size-mb", "x"}, "--tmpfs-size-mb");
  expect_usage_error({"--uv-path", ""}, "--uv-path");
  expect_usage_error({"--run", "/nonexistent/script.py"}, "--run");
  expect_usage_error({"--bogus-flag"}, "--bogus-flag");
  expect_usage_error({"--max-timeout"}, "--max-timeout");
}

TEST_CASE("a default timeout equal to the maximum is fine") {
  const auto result = parse({"--max-timeout", "5", "--default-timeout", "5"});
  REQUIRE(result.options.has_value());
  CHECK(result.options->engine.default_timeout_seconds == 5);
}

TEST_CASE("--help and --version print to stdout and exit 0") {
  const auto help = parse({"--help"});
  CHECK_FALSE(help.options.has_value());
  CHECK(help.exit_code == 0);
  for (const char* flag : {"--python-version", "--sandbox-backend", "--max-timeout",
                           "--default-timeout", "--max-output-bytes", "--no-warm-cache",
                           "--uv-path", "--log-level", "--version", "--preload", "--network",
                           "--memory-limit-mb", "--run", "--offline", "--find-links"}) {
    CHECK(help.stdout_text.find(flag) != std::string::npos);
  }
  const auto version = parse({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.stdout_text == "mcp-python-exec-sandbox " MPES_VERSION "\n");
}

TEST_CASE("--run refuses what is not a regular readable file of a script's size") {
  expect_usage_error({"--run", MPES_SOURCE_DIR}, "--run");       // a directory
  expect_usage_error({"--run", "/dev/zero"}, "--run");            // a device
  CHECK(parse({"--run", MPES_SOURCE_DIR}).stderr_text.find("is not a regular file") != std::string::npos);
  char fifo[] = "/tmp/mpes-cli-fifo-XXXXXX";
  REQUIRE(::mkdtemp(fifo) != nullptr);
  const std::string dir = fifo;
  REQUIRE(::mkfifo((dir + "/f").c_str(), 0600) == 0);
  expect_usage_error({"--run", dir + "/f"}, "--run");  // a FIFO would block
  // Over 16 MiB (sparse: nothing is written).
  const std::string big = dir + "/big.py";
  {
    FILE* f = std::fopen(big.c_str(), "w");
    REQUIRE(f != nullptr);
    REQUIRE(::ftruncate(::fileno(f), static_cast<off_t>(mcp::kMaxRunFileBytes) + 1) == 0);
    std::fclose(f);
  }
  expect_usage_error({"--run", big}, "--run");
  CHECK(parse({"--run", big}).stderr_text.find("at most 16 MiB") != std::string::npos);
  REQUIRE(::truncate(big.c_str(), static_cast<off_t>(mcp::kMaxRunFileBytes)) == 0);
  CHECK(parse({"--run", big}).options.has_value());  // exactly the limit is fine
  ::unlink(big.c_str());
  ::unlink((dir + "/f").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("--run takes a readable file") {
  const auto result = parse({"--run", MPES_SOURCE_DIR "/CMakeLists.txt"});
  REQUIRE(result.options.has_value());
  CHECK(result.options->run_file == std::optional<std::string>(MPES_SOURCE_DIR "/CMakeLists.txt"));
}

namespace {

std::string write_token_file(const std::string& name, const std::string& content) {
  const std::string path = "/tmp/mpes-cli-test-" + std::to_string(::getpid()) + "-" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(content.c_str(), f);
  std::fclose(f);
  return path;
}

}  // namespace

TEST_CASE("http: defaults are stdio, and loopback port 8000 for http") {
  auto result = parse({});
  REQUIRE(result.options.has_value());
  CHECK(result.options->transport == mcp::Transport::stdio);
  result = parse({"--transport", "http"});
  REQUIRE(result.options.has_value());
  const auto& http = result.options->http;
  CHECK(result.options->transport == mcp::Transport::http);
  CHECK(http.host == "127.0.0.1");
  CHECK(http.port == 8000);
  CHECK(http.loopback);
  CHECK_FALSE(http.auth_token.has_value());
  CHECK(http.max_connections == 256);
  CHECK(http.read_timeout_seconds == 30);
}

TEST_CASE("http: flags reach the options; localhost and IPv6 loopback count as loopback") {
  const auto token = write_token_file("ok", "  0123456789abcdef0123\n");
  auto result = parse({"--transport", "http", "--host", "::1", "--port", "0", "--auth-token-file",
                       token, "--max-connections", "8", "--http-read-timeout", "5"});
  REQUIRE(result.options.has_value());
  const auto& http = result.options->http;
  CHECK(http.host == "::1");
  CHECK(http.loopback);
  CHECK(http.port == 0);
  CHECK(http.auth_token == "0123456789abcdef0123");
  CHECK(http.max_connections == 8);
  CHECK(http.read_timeout_seconds == 5);
  result = parse({"--transport", "http", "--host", "localhost"});
  REQUIRE(result.options.has_value());
  CHECK(result.options->http.host == "127.0.0.1");
  CHECK(result.options->http.loopback);
  result = parse({"--transport", "http", "--host", "127.8.9.10"});
  REQUIRE(result.options.has_value());
  CHECK(result.options->http.loopback);
  std::remove(token.c_str());
}

TEST_CASE("http: listening beyond loopback needs a token or an explicit opt-out") {
  for (const char* host : {"0.0.0.0", "192.0.2.7", "::"}) {
    const auto refused = parse({"--transport", "http", "--host", host});
    CHECK_FALSE(refused.options.has_value());
    CHECK(refused.exit_code == 2);
    CHECK(refused.stderr_text.find("--auth-token-file") != std::string::npos);
    CHECK(refused.stderr_text.find("--allow-unauthenticated") != std::string::npos);
    const auto allowed = parse({"--transport", "http", "--host", host, "--allow-unauthenticated"});
    REQUIRE(allowed.options.has_value());
    CHECK_FALSE(allowed.options->http.loopback);
  }
  const auto token = write_token_file("remote", "ffffffffffffffffffffffffffffffff");
  const auto with_token = parse({"--transport", "http", "--host", "0.0.0.0", "--auth-token-file", token});
  REQUIRE(with_token.options.has_value());
  CHECK(with_token.options->http.auth_token.has_value());
  std::remove(token.c_str());
}

TEST_CASE("http: bad values exit 2 naming the flag") {
  expect_usage_error({"--transport", "websocket"}, "--transport");
  expect_usage_error({"--transport", "http", "--host", "example.com"}, "--host");
  expect_usage_error({"--transport", "http", "--port", "65536"}, "--port");
  expect_usage_error({"--transport", "http", "--port", "-1"}, "--port");
  expect_usage_error({"--transport", "http", "--max-connections", "0"}, "--max-connections");
  expect_usage_error({"--transport", "http", "--http-read-timeout", "0"}, "--http-read-timeout");
  expect_usage_error({"--port", "9000"}, "--port");  // an HTTP flag without --transport http
  expect_usage_error({"--allow-unauthenticated"}, "--allow-unauthenticated");
  expect_usage_error({"--transport", "http", "--auth-token-file", "/nonexistent/token"},
                     "--auth-token-file");
  const auto empty = write_token_file("empty", "\n\n");
  expect_usage_error({"--transport", "http", "--auth-token-file", empty}, "--auth-token-file");
  const auto short_token = write_token_file("short", "abc\n");
  expect_usage_error({"--transport", "http", "--auth-token-file", short_token}, "--auth-token-file");
  const auto spaced = write_token_file("spaced", "0123456789 abcdef0123\n");
  expect_usage_error({"--transport", "http", "--auth-token-file", spaced}, "--auth-token-file");
  for (const auto& path : {empty, short_token, spaced}) std::remove(path.c_str());
}

TEST_CASE("session and file flags: defaults, values, and errors naming the flag") {
  const auto defaults = parse({});
  REQUIRE(defaults.options.has_value());
  CHECK(defaults.options->engine.max_sessions == 8);
  CHECK(defaults.options->engine.session_idle_seconds == 900);
  CHECK(defaults.options->engine.session_snapshots == 8);
  CHECK(defaults.options->engine.max_output_file_bytes == 10u << 20);
  const auto set = parse({"--max-sessions", "0", "--session-idle-seconds", "5", "--session-snapshots", "2",
                          "--max-output-file-bytes", "1000"});
  REQUIRE(set.options.has_value());
  CHECK(set.options->engine.max_sessions == 0);
  CHECK(set.options->engine.session_idle_seconds == 5);
  CHECK(set.options->engine.session_snapshots == 2);
  CHECK(set.options->engine.max_output_file_bytes == 1000);
  expect_usage_error({"--max-sessions", "-1"}, "--max-sessions");
  expect_usage_error({"--max-sessions", "many"}, "--max-sessions");
  expect_usage_error({"--session-idle-seconds", "0"}, "--session-idle-seconds");
  expect_usage_error({"--session-snapshots", "0"}, "--session-snapshots");
  expect_usage_error({"--max-output-file-bytes", "-1"}, "--max-output-file-bytes");
}
