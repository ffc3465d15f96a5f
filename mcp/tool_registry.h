// Tools as the session dispatches them: a definition (what tools/list shows) and an asynchronous
// handler that answers through a ToolCall.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/log_level.h"

namespace mcp {

// One tools/call in flight. Every method must be called on the session's (io) thread.
class ToolCall {
 public:
  virtual ~ToolCall() = default;
  virtual const nlohmann::json& arguments() const = 0;
  // Sends notifications/progress when the caller asked for it (_meta.progressToken); values
  // that do not increase are dropped, so the client always sees a strictly increasing series.
  virtual void progress(double value, std::optional<double> total, const std::string& message) = 0;
  // Answers with a CallToolResult. Only the first call counts; after a cancellation it is
  // silently dropped (the response is suppressed).
  virtual void finish(nlohmann::json call_tool_result) = 0;
  // Runs `hook` once when the call is cancelled (at once if it already was).
  virtual void on_cancel(std::function<void()> hook) = 0;
  virtual bool cancelled() const = 0;
  // notifications/message, subject to logging/setLevel.
  virtual void log(LogLevel level, nlohmann::json data) = 0;
  // Who asked (an HTTP client's address; empty on stdio): runs of different clients take turns.
  virtual const std::string& client() const = 0;
  // Whose sessions the call may reach, as a key the engine compares (RunRequest::owner): ""
  // on stdio (one client), the protocol session over HTTP's initialize era, the holders of the
  // server's token in the stateless era. A session is only found by its creator's calls.
  virtual const std::string& owner() const = 0;
};

using ToolHandler = std::function<void(std::shared_ptr<ToolCall>)>;

struct ToolDefinition {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;  // null = none
  nlohmann::json annotations;    // null = none
  ToolHandler handler;

  // The tools/list entry. Both schemas are JSON Schema 2020-12 and say so ($schema), in every
  // protocol version.
  nlohmann::json to_json() const;
};

inline constexpr const char* kJsonSchemaDialect = "https://json-schema.org/draft/2020-12/schema";

// The annotations of a tool that only reads: read-only, idempotent, closed world.
nlohmann::json read_only_annotations(const std::string& title);

class ToolRegistry {
 public:
  void add(ToolDefinition tool);  // replaces a tool of the same name
  const ToolDefinition* find(std::string_view name) const;
  nlohmann::json list() const;  // {"tools": [...]}
  std::vector<std::string> names() const;

 private:
  std::vector<ToolDefinition> tools_;
};

}  // namespace mcp
