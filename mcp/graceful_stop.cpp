#include "engine/event_loop.h"  // first: see there
#include "mcp/graceful_stop.h"

#include <chrono>
#include <csignal>
#include <utility>

#include <spdlog/spdlog.h>

namespace mcp {

namespace {

// Engine::shutdown gets this long before the process stops waiting for it; then the last
// responses get until kHardStop to be written. Both within the 2 s exit budget.
constexpr auto kShutdownBudget = std::chrono::milliseconds(1500);
constexpr auto kHardStop = std::chrono::milliseconds(1800);

}  // namespace

GracefulStop::GracefulStop(asio::io_context& io, engine::Engine& engine, Hooks hooks, bool handle_signals)
    : io_(io), engine_(engine), hooks_(std::move(hooks)), deadline_(io), hard_stop_(io), signals_(io) {
  if (!handle_signals) return;
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.add(SIGHUP);
  signals_.async_wait([this](const asio::error_code& ec, int signal) {
    if (!ec) begin("signal " + std::to_string(signal));
  });
}

void GracefulStop::flush_then_stop() {
  hooks_.flush([this] { io_.stop(); });
}

void GracefulStop::begin(const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  spdlog::info("shutting down: {}", why);
  hooks_.stop_accepting();
  asio::error_code ignored;
  signals_.cancel(ignored);
  hooks_.cancel_calls();
  deadline_.expires_after(kShutdownBudget);
  deadline_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    spdlog::warn("engine shutdown did not finish in time; exiting anyway");
    forced_ = true;
    hooks_.abandon_in_flight("The server is shutting down");
    flush_then_stop();
  });
  hard_stop_.expires_after(kHardStop);
  hard_stop_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    forced_ = true;
    io_.stop();
  });
  engine_.shutdown([this] {
    hooks_.abandon_in_flight("The server is shutting down");
    flush_then_stop();
  });
}

}  // namespace mcp
