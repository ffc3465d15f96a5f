// The HTTP server under the MCP endpoint: RESTinio (Debian's librestinio-dev, HTTP parsing by
// http-parser) on the server's own io_context. It reads requests within the limits below, hands
// each to the handler as a Request with a Response to answer through, and reports every
// connection that closes, so a client hanging up cancels what it asked for. This file is the only
// one that sees RESTinio.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/event_loop.h"
#include "mcp/framing.h"
#include "mcp/http/exchange.h"
#include "mcp/http/output_budget.h"

namespace mcp::http {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;                       // 0: any free port
  unsigned max_connections = 256;                  // more wait in the listen backlog
  std::chrono::seconds read_timeout{30};           // one request, headers and body; idle keep-alive
  std::chrono::seconds write_timeout{60};          // one write to a client that does not read
  std::size_t max_body_bytes = kMaxLineBytes;      // 16 MiB, as one stdio line
  // Charged with every byte handed to a connection until it is written (none: not counted).
  std::shared_ptr<OutputBudget> budget;
};

class Listener {
 public:
  using Handler = std::function<void(Request, std::shared_ptr<Response>)>;
  using ClosedFn = std::function<void(std::uint64_t connection)>;

  Listener(asio::io_context& io, ListenerOptions options, Handler handler, ClosedFn closed);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds and listens; throws std::runtime_error naming the address and the reason.
  void open();
  std::uint16_t port() const;
  // Stops accepting connections (open ones are still served).
  void stop_accepting();
  // Runs `done` once everything handed to the sockets so far has been written (or failed).
  void when_flushed(std::function<void()> done);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcp::http
