// Forwards the server's own log records (spdlog, any thread) to the MCP client as
// notifications/message, subject to the client's logging/setLevel.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>

#include "mcp/log_level.h"

namespace mcp {

LogLevel to_mcp_level(spdlog::level::level_enum level);

class ClientLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  using Forward = std::function<void(LogLevel, std::string)>;
  // `forward` may be called from any thread; it must hand the record over (e.g. asio::post).
  void attach(Forward forward);
  // After this, records are dropped; call before the receiving side goes away.
  void detach();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  Forward forward_;
};

}  // namespace mcp
