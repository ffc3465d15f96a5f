// How a serving loop ends, the same on every transport: stop taking new work, cancel what is
// queued, let the engine end every run (runs in flight are answered with the output they had),
// flush the last responses, then stop the io_context -- within the 2 s exit budget whatever the
// engine or the client does. SIGTERM, SIGINT and SIGHUP start it when signals are handled.
#pragma once

#include <functional>
#include <string>

#include "engine/event_loop.h"  // first: see there
#include "engine/engine.h"

namespace mcp {

class GracefulStop {
 public:
  struct Hooks {
    std::function<void()> stop_accepting;                     // no new input or connections
    std::function<void()> cancel_calls;                       // queued and running calls end
    std::function<void(const std::string&)> abandon_in_flight;  // answer what is left with this
    std::function<void(std::function<void()>)> flush;         // then: written responses are out
  };

  GracefulStop(asio::io_context& io, engine::Engine& engine, Hooks hooks, bool handle_signals);
  GracefulStop(const GracefulStop&) = delete;
  GracefulStop& operator=(const GracefulStop&) = delete;

  // Starts the stop (once); `why` is logged.
  void begin(const std::string& why);
  bool stopping() const { return stopping_; }
  // The engine did not finish in time, or the hard stop struck: the process should not wait for
  // anything else (static destructors, a probe on a worker thread) on its way out.
  bool forced() const { return forced_; }

 private:
  void flush_then_stop();

  asio::io_context& io_;
  engine::Engine& engine_;
  Hooks hooks_;
  asio::steady_timer deadline_;
  asio::steady_timer hard_stop_;
  asio::signal_set signals_;
  bool stopping_ = false;
  bool forced_ = false;
};

}  // namespace mcp
