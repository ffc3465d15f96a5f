// mcp-python-exec-sandbox: MCP server on stdio or Streamable HTTP (or --run FILE once).
#include <malloc.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "mcp/cli.h"
#include "mcp/open_file_limit.h"
#include "mcp/server.h"
#include "mcp/stdio_guard.h"

namespace {

void write_fd(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

void setup_logging(const std::string& level) {
  // stderr only: stdout carries nothing but MCP messages.
  auto logger = spdlog::stderr_logger_mt("mcp-python-exec-sandbox");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const auto cli = mcp::parse_cli(args);
    if (!cli.options) {
      write_fd(STDOUT_FILENO, cli.stdout_text);  // stdout-ok: --help / --version, not MCP mode
      if (!cli.stderr_text.empty()) write_fd(STDERR_FILENO, cli.stderr_text + "\n");
      return cli.exit_code;
    }
    setup_logging(cli.options->log_level);
    // Outputs of up to tens of MiB pass through several buffers per call: served from the heap
    // and kept there, rather than each one a fresh mmap whose every page faults (~17-19 us a
    // fault in a paravirtualised guest) and is unmapped again with a TLB flush.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    // A client that goes away must show up as a write error, not kill the server.
    std::signal(SIGPIPE, SIG_IGN);
    mcp::raise_open_file_limit();

    int status = 0;
    if (cli.options->transport == mcp::Transport::http) {
      status = mcp::serve_http(*cli.options);
    } else {
      std::string error;
      auto fds = mcp::take_over_stdio(&error);
      if (!fds) {
        spdlog::critical("{}", error);
        return 1;
      }
      status = cli.options->run_file ? mcp::run_once(*cli.options, std::move(fds->out))
                                     : mcp::serve_stdio(*cli.options, std::move(*fds));
    }
    return status;
  } catch (const std::exception& e) {
    spdlog::critical("fatal: {}", e.what());
    return 1;
  }
}
