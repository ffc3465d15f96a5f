// The MCP session (mcp/session.*): every line a client can send, dispatched against a registry of
// fake tools (one answers at once, one stays open until cancelled or answered later, one throws).
// Input: lines separated by '\n'; a line "!" answers the oldest open call.
// Properties: nothing throws out of handle_line; every message the session sends is one line of
// JSON-RPC 2.0 (a result with a valid id, an error with an integer code, or a notification);
// at shutdown no call is left in flight.
//
// Kept small on purpose: only Session's public API is used, so that it follows that API easily.
#include <deque>
#include <memory>
#include <string>

#include "fuzz/fuzz_check.h"
#include "mcp/jsonrpc.h"
#include "mcp/session.h"

using nlohmann::json;

namespace {

mcp::ToolDefinition tool(const char* name, mcp::ToolHandler handler) {
  mcp::ToolDefinition t;
  t.name = name;
  t.description = name;
  t.input_schema = {{"type", "object"}, {"properties", json::object()}};
  t.handler = std::move(handler);
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::deque<std::shared_ptr<mcp::ToolCall>> open;
  mcp::ToolRegistry registry;
  registry.add(tool("echo", [](std::shared_ptr<mcp::ToolCall> call) {
    call->progress(1, 2, "half");
    call->finish({{"content", json::array({{{"type", "text"}, {"text", call->arguments().dump()}}})}});
  }));
  registry.add(tool("slow", [&open](std::shared_ptr<mcp::ToolCall> call) {
    std::weak_ptr<mcp::ToolCall> weak = call;
    call->on_cancel([weak] {
      if (auto c = weak.lock()) c->finish({{"content", json::array()}, {"isError", true}});
    });
    call->log(mcp::LogLevel::error, "slow call started");
    open.push_back(std::move(call));
  }));
  registry.add(tool("broken", [](std::shared_ptr<mcp::ToolCall>) { throw std::runtime_error("boom"); }));

  auto check_message = [&](const json& m) {
    FUZZ_CHECK(m.is_object());
    FUZZ_CHECK(m.value("jsonrpc", "") == "2.0");
    if (m.contains("method")) {
      FUZZ_CHECK(!m.contains("id"));
      return;
    }
    FUZZ_CHECK(m.contains("result") != m.contains("error"));
    if (m.contains("result")) FUZZ_CHECK(m.contains("id") && mcp::jsonrpc::is_valid_id(m["id"]));
    if (m.contains("error")) FUZZ_CHECK(m["error"]["code"].is_number_integer());
  };
  mcp::Session session(registry, mcp::SessionOptions{"fuzz"}, [&](std::string message) {
    FUZZ_CHECK(message.find('\n') == std::string::npos);
    const auto parsed = mcp::jsonrpc::parse(message);
    FUZZ_CHECK(parsed.has_value());
    if (parsed->is_array()) {
      for (const auto& m : *parsed) check_message(m);
    } else {
      check_message(*parsed);
    }
  });

  std::string_view rest = fuzz::as_text(data, size);
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line == "!") {
      if (!open.empty()) {
        open.front()->finish({{"content", json::array()}});
        open.pop_front();
      }
      continue;
    }
    session.handle_line(line);
  }
  session.stop_accepting_and_cancel();
  session.abandon_in_flight("shutting down");
  FUZZ_CHECK(session.calls_in_flight() == 0);
  return 0;
}
