// How much work a stdio client may have in progress, as pure rules. A call in flight will add
// its reply to the output queue whether or not the client reads, so the server takes a new call
// only while the replies already queued, plus what every call in flight may still reply, plus
// the new call's own share stay within a byte bound, and while fewer calls than a count bound are
// in flight (a batch counts each tools/call in it). Messages that start no call (pings, cancellations, notifications, tools/list, ...)
// are never held back by this rule: they add a small reply at most, and a cancellation is how a
// client frees room. Used by mcp/server.cpp; the numbers are stated in README.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace mcp {

struct IntakeLimits {
  std::size_t max_bytes = 0;  // queued replies + the shares of calls in flight
  std::size_t max_calls = 0;  // calls in flight
};

struct IntakeLoad {
  std::size_t queued_bytes = 0;     // replies written to nobody yet
  std::size_t reserved_bytes = 0;   // shares of the calls in flight (CallTable::reserved_bytes)
  std::size_t calls_in_flight = 0;
};

// The largest reply one tools/call can produce under `config`: stdout and stderr twice each
// (text and structuredContent, JSON-escaped within --max-output-bytes), the value's repr twice and
// its JSON once, --max-images figures in base64, output files within --max-output-file-bytes in
// base64 (a text file is sent as text only when escaping does not make it larger than that),
// and room for notes and the envelope.
std::size_t reply_bound_bytes(const engine::EngineConfig& config);

// A call's share of the bound: its reply bound plus its request, held while it runs.
inline std::size_t call_share_bytes(std::size_t reply_bound, std::size_t request_bytes) {
  return reply_bound + 2 * request_bytes;
}

// The bounds for a server configured by `config`: at least 64 MiB, and room for one call more
// than --max-concurrent-runs at their reply bound, so that a client reading its replies can keep
// every run slot busy; at most 256 calls in flight.
IntakeLimits intake_limits(const engine::EngineConfig& config);

// May `calls` new calls (one message: a request, or a batch), each with `share` bytes, start now?
// Always when they are none, or when nothing is in flight or queued (one message may be larger
// than the bound by itself).
bool may_start_calls(const IntakeLoad& load, std::size_t calls, std::size_t share,
                     const IntakeLimits& limits);

// A JSON-RPC batch is answered by one array, so the replies of its calls are held until the last
// one ends: its calls start one by one, each while the replies the batch holds, plus what its
// running calls and the new one may still reply, stay within `max_bytes` (0: no bound). The first
// call of a batch always starts; once nothing of it runs and no room is left, the rest are refused
// (the client sends them again in another message) rather than held without bound.
enum class BatchCall { start, wait, refuse };
BatchCall next_batch_call(std::size_t held_bytes, std::size_t running, std::size_t reply_bound,
                          std::size_t max_bytes);

// How many calls this message (parsed) starts: 1 for a tools/call request, the number of
// tools/call requests in a batch, else 0.
std::size_t calls_started(const nlohmann::json& message);

}  // namespace mcp
