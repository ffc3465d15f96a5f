#include "mcp/client_log_sink.h"

namespace mcp {

LogLevel to_mcp_level(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LogLevel::debug;
    case spdlog::level::info: return LogLevel::info;
    case spdlog::level::warn: return LogLevel::warning;
    case spdlog::level::err: return LogLevel::error;
    case spdlog::level::critical: return LogLevel::critical;
    default: return LogLevel::info;
  }
}

void ClientLogSink::attach(Forward forward) {
  std::lock_guard<std::mutex> lock(mutex_);
  forward_ = std::move(forward);
}

void ClientLogSink::detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  forward_ = nullptr;
}

void ClientLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  // base_sink holds mutex_ here.
  if (!forward_) return;
  forward_(to_mcp_level(msg.level), std::string(msg.payload.data(), msg.payload.size()));
}

}  // namespace mcp
