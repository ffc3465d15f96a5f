#include "mcp/tools/session_tools.h"

#include <cstdio>
#include <utility>

#include "mcp/tools/arguments.h"
#include "mcp/tools/services.h"

namespace mcp::tools {

using json = nlohmann::json;

namespace {

constexpr const char* kRestores =
    "A snapshot restores memory (variables, imports, open objects, random generators' state), not "
    "the files in the working directory.";

std::string steps_text(const std::vector<std::uint64_t>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(steps[i]);
    if (j != i) out += "-" + std::to_string(steps[j]);
    i = j + 1;
  }
  return out;
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

json info_schema() {
  const json string = {{"type", "string"}};
  const json integer = {{"type", "integer"}};
  return {{"type", "object"},
          {"properties",
           {{"session_id", string},
            {"python_version", string},
            {"dependencies", {{"type", "array"}, {"items", string}}},
            {"step", {{"type", "integer"}, {"description", "The step the next one starts from"}}},
            {"kept_steps", {{"type", "array"}, {"items", integer}, {"description", "Steps reset_session and fork_session can use"}}},
            {"steps_run", integer},
            {"age_seconds", integer},
            {"idle_seconds", integer},
            {"memory_bytes", {{"type", "integer"}, {"description", "Its sandbox's memory (shared with its forks); -1 unknown"}}},
            {"running", {{"type", "boolean"}}},
            {"snapshots", {{"type", "boolean"}, {"description", "false: its interpreter runs threads, steps run in place"}}},
            {"forked_from", string},
            {"shares_sandbox_with", string},
            {"note", string}}},
          {"required", {"session_id", "step"}}};
}

// Answers a session call: its info (text + structuredContent), or the error.
void answer(const std::shared_ptr<ToolCall>& call, const engine::SessionReply& reply, const std::string& lead) {
  if (reply.error || !reply.session) {
    call->finish(error_result(reply.error.value_or("the session call failed")));
    return;
  }
  std::string text = lead.empty() ? "" : lead + "\n";
  text += session_info_text(*reply.session);
  if (!reply.note.empty()) text += "\n" + reply.note;
  json structured = session_info_json(*reply.session);
  if (!reply.note.empty()) structured["note"] = reply.note;
  call->finish({{"content", json::array({text_content(text)})}, {"structuredContent", structured}, {"isError", false}});
}

json annotations(const std::string& title, bool read_only, bool destructive, bool idempotent) {
  return {{"title", title},
          {"readOnlyHint", read_only},
          {"destructiveHint", destructive},
          {"idempotentHint", idempotent},
          {"openWorldHint", false}};
}

ToolDefinition create_session_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "create_session";
  tool.title = "Create a Python session";
  tool.description =
      "Start a live, sandboxed Python interpreter that keeps its state between calls: load data "
      "once, then run many steps on it with execute_python(script=..., session_id=...). Returns the "
      "session_id. Every step is snapshotted: reset_session rewinds to an earlier step, "
      "fork_session branches a new session from one. " + std::string(kRestores) +
      " A session has its own working directory, kept between its steps. At most " +
      std::to_string(services.config.max_sessions) + " sessions exist at once; one idle for " +
      std::to_string(services.config.session_idle_seconds) +
      " s is closed. Its packages are fixed here (dependencies, PEP 508).\n\n"
      "Example: create_session(dependencies=[\"pandas\"])";
  tool.input_schema = {
      {"type", "object"},
      {"properties",
       {{"dependencies",
         {{"type", "array"}, {"items", {{"type", "string"}}}, {"default", json::array()},
          {"description", "PEP 508 requirements available to every step of the session"}}},
        {"python_version", {{"type", "string"}, {"description", "CPython \"X.Y\" (default: the server's)"}}}}}};
  tool.output_schema = info_schema();
  tool.annotations = annotations(tool.title, false, false, false);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    engine::SessionRequest request;
    try {
      request.dependencies = string_list_argument(call->arguments(), "dependencies");
      request.python_version = python_version_argument(call->arguments());
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    request.owner = call->owner();
    request.client = call->client();
    std::weak_ptr<ToolCall> weak = call;
    auto progress = [weak](double value, std::optional<double> total, const std::string& message) {
      if (auto c = weak.lock()) c->progress(value, total, message);
    };
    auto handle = services.engine.create_session(std::move(request), std::move(progress),
                                                 [call](engine::SessionReply reply) {
                                                   answer(call, reply, reply.session ? "session_id: " + reply.session->id : "");
                                                 });
    if (handle) call->on_cancel([handle] { handle->cancel(); });
  };
  return tool;
}

ToolDefinition fork_session_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "fork_session";
  tool.title = "Fork a Python session";
  tool.description =
      "Branch a new session from a step of an existing one (default: its latest step). The new "
      "session continues from that state in processes of its own: what it does to its memory never "
      "reaches the original, and the other way round. It shares the original's sandbox: the same "
      "working directory (files written by one are seen by the other) and the same memory limit. "
      "Returns the new session_id.\n\nExample: fork_session(session_id=\"...\", step=3)";
  tool.input_schema = {{"type", "object"},
                       {"properties",
                        {{"session_id", {{"type", "string"}}},
                         {"step", {{"type", "integer"}, {"minimum", 0}, {"description", "Default: the latest"}}}}},
                       {"required", {"session_id"}}};
  tool.output_schema = info_schema();
  tool.annotations = annotations(tool.title, false, false, false);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    std::string id;
    std::optional<std::uint64_t> step;
    try {
      id = *session_id_argument(call->arguments(), true);
      step = step_argument(call->arguments(), "step");
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    services.engine.fork_session(call->owner(), id, step, [call](engine::SessionReply reply) {
      answer(call, reply, reply.session ? "session_id: " + reply.session->id : "");
    });
  };
  return tool;
}

ToolDefinition reset_session_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "reset_session";
  tool.title = "Rewind a Python session";
  tool.description =
      "Rewind a session to the state right after `step` (0 = fresh), dropping the steps after it; "
      "the next step is numbered from there. " + std::string(kRestores) + " The last " +
      std::to_string(services.config.session_snapshots) +
      " steps (and step 0) are kept.\n\nExample: reset_session(session_id=\"...\", step=2)";
  tool.input_schema = {{"type", "object"},
                       {"properties", {{"session_id", {{"type", "string"}}}, {"step", {{"type", "integer"}, {"minimum", 0}}}}},
                       {"required", {"session_id", "step"}}};
  tool.output_schema = info_schema();
  tool.annotations = annotations(tool.title, false, true, true);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    std::string id;
    std::uint64_t step = 0;
    try {
      id = *session_id_argument(call->arguments(), true);
      const auto s = step_argument(call->arguments(), "step");
      if (!s) throw ArgumentError("Missing required argument 'step' (a step number; 0 = fresh)");
      step = *s;
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    services.engine.reset_session(call->owner(), id, step,
                                  [call](engine::SessionReply reply) { answer(call, reply, ""); });
  };
  return tool;
}

ToolDefinition close_session_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "close_session";
  tool.title = "Close a Python session";
  tool.description =
      "End a session: its interpreter and snapshots go. Its sandbox (and working directory) goes "
      "with the last session in it (forks share it).\n\nExample: close_session(session_id=\"...\")";
  tool.input_schema = {{"type", "object"}, {"properties", {{"session_id", {{"type", "string"}}}}}, {"required", {"session_id"}}};
  tool.output_schema = info_schema();
  tool.annotations = annotations(tool.title, false, true, true);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    std::string id;
    try {
      id = *session_id_argument(call->arguments(), true);
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    services.engine.close_session(call->owner(), id, [call](engine::SessionReply reply) { answer(call, reply, ""); });
  };
  return tool;
}

ToolDefinition list_sessions_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "list_sessions";
  tool.title = "List your Python sessions";
  tool.description =
      "List your sessions: id, age, idle time, the step each is at, the steps kept, memory. Takes "
      "no arguments, changes nothing.\n\nExample: list_sessions()";
  tool.input_schema = {{"type", "object"}, {"properties", json::object()}};
  tool.output_schema = {{"type", "object"},
                        {"properties",
                         {{"sessions", {{"type", "array"}, {"items", info_schema()}}},
                          {"max_sessions", {{"type", "integer"}}},
                          {"total_sessions", {{"type", "integer"}}},
                          {"idle_seconds", {{"type", "integer"}}},
                          {"snapshots", {{"type", "integer"}}},
                          {"memory", {{"type", "string"}}}}},
                        {"required", {"sessions", "max_sessions"}}};
  tool.annotations = read_only_annotations(tool.title);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    services.engine.list_sessions(call->owner(), [call](engine::SessionList list) {
      call->finish({{"content", json::array({text_content(session_list_text(list))})},
                    {"structuredContent", session_list_json(list)},
                    {"isError", false}});
    });
  };
  return tool;
}

}  // namespace

json session_info_json(const engine::SessionInfo& info) {
  return {{"session_id", info.id},
          {"python_version", info.python_version},
          {"dependencies", info.dependencies},
          {"step", info.step},
          {"kept_steps", info.kept},
          {"steps_run", info.steps_run},
          {"age_seconds", info.age_seconds},
          {"idle_seconds", info.idle_seconds},
          {"memory_bytes", info.memory_bytes},
          {"running", info.running},
          {"snapshots", info.snapshots},
          {"forked_from", info.forked_from},
          {"shares_sandbox_with", info.shares_sandbox_with}};
}

std::string session_info_text(const engine::SessionInfo& info) {
  std::string deps;
  for (const auto& d : info.dependencies) deps += (deps.empty() ? "" : ", ") + d;
  std::string text = "session " + info.id + ": Python " + info.python_version +
                     (deps.empty() ? "" : ", dependencies: " + deps) + "\n";
  text += "step " + std::to_string(info.step) + " (the next step is " + std::to_string(info.step + 1) +
          "); kept steps: " + steps_text(info.kept) + "\n";
  text += "age " + std::to_string(info.age_seconds) + " s, idle " + std::to_string(info.idle_seconds) + " s";
  if (info.memory_bytes >= 0) text += ", memory " + mib(info.memory_bytes);
  if (info.running) text += ", a step is running";
  if (!info.snapshots) text += ", snapshots off (its interpreter runs threads)";
  if (!info.forked_from.empty()) text += "\nforked from " + info.forked_from;
  if (!info.shares_sandbox_with.empty()) text += "\nshares its sandbox (work dir, memory limit) with " + info.shares_sandbox_with;
  return text;
}

json session_list_json(const engine::SessionList& list) {
  json sessions = json::array();
  for (const auto& s : list.sessions) sessions.push_back(session_info_json(s));
  return {{"sessions", std::move(sessions)},
          {"max_sessions", list.max_sessions},
          {"total_sessions", list.total},
          {"idle_seconds", list.idle_seconds},
          {"snapshots", list.snapshots},
          {"memory", list.memory}};
}

std::string session_list_text(const engine::SessionList& list) {
  std::string text = std::to_string(list.sessions.size()) + " session(s) of yours; " + std::to_string(list.total) +
                     " of at most " + std::to_string(list.max_sessions) + " in all (--max-sessions); idle ones close after " +
                     std::to_string(list.idle_seconds) + " s; the last " + std::to_string(list.snapshots) +
                     " steps of each are kept.\nMemory: " + list.memory;
  for (const auto& s : list.sessions) text += "\n\n" + session_info_text(s);
  return text;
}

void register_session_tools(ToolRegistry& registry, const Services& services) {
  registry.add(create_session_tool(services));
  registry.add(fork_session_tool(services));
  registry.add(reset_session_tool(services));
  registry.add(close_session_tool(services));
  registry.add(list_sessions_tool(services));
}

}  // namespace mcp::tools
