// How many bytes of responses an HTTP client may leave unsent. Over stdio a client that stops
// reading stops being read (mcp/intake.h); over HTTP a client can keep sending calls on other
// connections, or close its connections and let the runs of an initialize-era session go on, so
// the server would keep their answers without bound. Here every byte handed to a connection
// and not yet written to its socket, and every byte of a session's event streams kept while no
// connection takes them, is charged to its client: the connection (stateless era) or the
// protocol session (initialize era). A new tools/call is refused, not buffered, while its client
// has `client_bytes` unsent (429) or all clients together `total_bytes` (503), both with
// Retry-After; everything already accepted is still answered, and once the client reads (or
// resumes its streams) its calls are taken again. Single-threaded (io thread).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace mcp::http {

struct OutputLimits {
  std::size_t client_bytes = std::size_t{64} << 20;
  std::size_t total_bytes = std::size_t{256} << 20;
  std::size_t call_bytes = 0;  // the most one call may reply (mcp/intake.h reply_bound_bytes)
};

// For a server configured by `config`: per client the stdio intake bound (mcp/intake.h: at least
// 64 MiB, room for one reply more than the run slots), four times that for the whole server.
// A batch's held replies count against its client as they come in, and its calls start within
// the client's bound (mcp/intake.h next_batch_call).
OutputLimits output_limits(const engine::EngineConfig& config);

struct OutputRefusal {
  int status = 429;          // 429 (this client) or 503 (the whole server)
  int retry_after_seconds = 1;
  std::string message;       // names the limit and what to do
};

// The rule alone: may a client with `client_unsent` bytes unsent start a call while all clients
// have `total_unsent`?
std::optional<OutputRefusal> refuse_call(std::size_t client_unsent, std::size_t total_unsent,
                                         const OutputLimits& limits);

class OutputBudget {
 public:
  explicit OutputBudget(OutputLimits limits) : limits_(limits) {}

  void add(const std::string& client, std::size_t bytes);
  void remove(const std::string& client, std::size_t bytes);
  std::size_t unsent(const std::string& client) const;
  // Told of each change (+/- bytes) of what `client` holds unsent: a session's event streams
  // kept for replay, its batches' replies (the function keeps `budget` alive).
  static std::function<void(std::ptrdiff_t)> charger(std::shared_ptr<OutputBudget> budget, std::string client);
  std::size_t total() const { return total_; }
  const OutputLimits& limits() const { return limits_; }
  std::optional<OutputRefusal> refuse_call(const std::string& client) const {
    return http::refuse_call(unsent(client), total_, limits_);
  }

  // The client a stateless connection is, and an initialize-era session.
  static std::string connection_client(std::uint64_t connection) { return "c" + std::to_string(connection); }
  static std::string session_client(const std::string& session_id) { return "s" + session_id; }

 private:
  OutputLimits limits_;
  std::map<std::string, std::size_t> unsent_;
  std::size_t total_ = 0;
};

}  // namespace mcp::http
