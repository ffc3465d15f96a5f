// A Session (the stdio protocol front) driven line by line, with three test tools: echo
// (answers at once), slow (stays open until the test finishes it) and broken (throws).
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mcp/session.h"

namespace test_support {

using nlohmann::json;

// A tool whose calls stay open until the test finishes them.
struct PendingCalls {
  std::vector<std::shared_ptr<mcp::ToolCall>> calls;
  int cancel_hooks_run = 0;
};

struct Harness {
  mcp::ToolRegistry registry;
  std::vector<json> out;
  PendingCalls pending;
  std::unique_ptr<mcp::Session> session;
  int initialized_callbacks = 0;
  std::size_t messages_when_initialized = 0;

  explicit Harness(mcp::SessionOptions options = mcp::SessionOptions{"Use the tools."}) {
    mcp::ToolDefinition echo;
    echo.name = "echo";
    echo.description = "echoes";
    echo.input_schema = {{"type", "object"}, {"properties", json::object()}};
    echo.handler = [](std::shared_ptr<mcp::ToolCall> call) {
      call->finish({{"content", json::array({{{"type", "text"}, {"text", call->arguments().dump()}}})}});
    };
    registry.add(echo);
    mcp::ToolDefinition slow;
    slow.name = "slow";
    slow.description = "never answers by itself";
    slow.input_schema = {{"type", "object"}, {"properties", json::object()}};
    slow.handler = [this](std::shared_ptr<mcp::ToolCall> call) {
      call->on_cancel([this] { ++pending.cancel_hooks_run; });
      pending.calls.push_back(call);
    };
    registry.add(slow);
    mcp::ToolDefinition broken;
    broken.name = "broken";
    broken.description = "throws";
    broken.input_schema = {{"type", "object"}, {"properties", json::object()}};
    broken.handler = [](std::shared_ptr<mcp::ToolCall>) { throw std::runtime_error("boom"); };
    registry.add(broken);
    session = std::make_unique<mcp::Session>(registry, std::move(options),
                                             [this](std::string line) {
                                               REQUIRE(line.find('\n') == std::string::npos);
                                               out.push_back(json::parse(line));
                                             });
    session->set_on_initialized([this] {
      ++initialized_callbacks;
      messages_when_initialized = out.size();
    });
  }

  void line(const std::string& text) { session->handle_line(text); }
  void send(const json& message) { session->handle_line(message.dump()); }
  void request(const json& id, const std::string& method, const json& params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }
  void notify(const std::string& method, const json& params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }
  json initialize(const std::string& version = "2025-06-18") {
    request(0, "initialize",
            {{"protocolVersion", version}, {"capabilities", json::object()},
             {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    notify("notifications/initialized");
    return take();
  }
  json take() {
    REQUIRE_FALSE(out.empty());
    json first = out.front();
    out.erase(out.begin());
    return first;
  }
};

inline int error_code(const json& response) { return response.at("error").at("code").get<int>(); }


}  // namespace test_support
