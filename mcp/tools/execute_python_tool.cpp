#include "mcp/tools/execute_python_tool.h"

#include <algorithm>
#include <utility>

#include "engine/files/work_files.h"
#include "mcp/run_result_format.h"
#include "mcp/tools/arguments.h"
#include "mcp/tools/services.h"

namespace mcp::tools {

using json = nlohmann::json;

int clamp_timeout(std::optional<std::int64_t> requested, const engine::EngineConfig& config) {
  const std::int64_t max = std::max(config.max_timeout_seconds, 1);
  return static_cast<int>(std::clamp<std::int64_t>(requested.value_or(config.default_timeout_seconds), 1, max));
}

std::string execute_python_description(const engine::EngineConfig& config) {
  const auto& limits = config.policy.limits;
  const bool sandboxed = config.policy.backend != sandbox::Backend::none;
  std::string text =
      "Run a Python script in a fresh, isolated sandbox and return its output.\n\n"
      "Each call runs `script` as __main__ in a new process (forked from a pre-warmed CPython, so "
      "startup costs about a millisecond). Without `session_id`, nothing survives between calls: "
      "no files, variables or installed packages. The working directory (also $HOME and $TMPDIR) is an empty "
      "temporary directory; stdin is empty; ";
  text += config.policy.network ? "network access is allowed.\n\n" : "there is no network access.\n\n";
  text +=
      "Third-party packages: declare them in a PEP 723 block at the top of the script, or pass "
      "them in `dependencies` (PEP 508 strings such as \"pandas>=2.2\"); packages the "
      "interpreter already provides (numpy, pandas, matplotlib on this host when installed "
      "there) are used without installing.\n\n"
      "Limits: timeout_seconds defaults to " + std::to_string(config.default_timeout_seconds) +
      " and is clamped to 1.." + std::to_string(config.max_timeout_seconds) +
      "; stdout and stderr keep at most " + std::to_string(config.max_output_bytes) +
      " bytes each (head and tail, with a marker)";
  if (sandboxed) {
    text += "; memory " + std::to_string(limits.memory_bytes >> 20) +
            " MiB for the whole run where the host gives the server a writable cgroup, else per "
            "process, private memory only (each result's notes then say so); " +
            std::to_string(limits.max_processes) + " processes";
  }
  text +=
      ".\n\n"
      "Result text, in this order: `--- stdout ---` and `--- stderr ---` sections (when "
      "non-empty), `--- return_value ---` (repr of a final expression, when not None), "
      "`--- exit_code: N ---`, `--- end: <reason> ---` when the run did not simply exit, "
      "`--- duration_ms: N ---`, `--- timed_out: true ---` on timeout, and a `--- usage: ... ---` "
      "line. matplotlib figures come back as PNG images. A script that raises is a normal "
      "result: exit code 1 and the traceback in stderr.\n\n"
      "Files: `input_files` ({\"data/in.csv\": \"text...\", \"img.png\": {\"base64\": \"...\"}}) are "
      "written into the working directory before the script; `output_files` (globs such as "
      "\"out/*.csv\") come back after it as embedded resources (at most " +
      std::to_string(config.max_output_file_bytes) +
      " bytes together). Paths stay inside the working directory; symlinks are never followed.\n\n"
      "Sessions: with `session_id` (from create_session) the script runs as the next step of that "
      "session's live interpreter: variables, imports and loaded data stay from step to step, and "
      "the value of a last expression is returned. A step that times out, is cancelled or crashes "
      "leaves the session as it was before the step; reset_session rewinds to an earlier step.\n\n"
      "Example:\n"
      "execute_python(script=\"# /// script\\n# dependencies = [\\\"requests>=2.31\\\"]\\n# ///\\n"
      "import requests\\nprint(requests.__version__)\", timeout_seconds=60)";
  return text;
}

ToolDefinition make_execute_python_tool(const Services& services) {
  const auto& config = services.config;
  ToolDefinition tool;
  tool.name = "execute_python";
  tool.title = "Run Python in a sandbox";
  tool.description = execute_python_description(config);
  tool.input_schema = {
      {"type", "object"},
      {"properties",
       {
           {"script",
            {{"type", "string"},
             {"description", "Python source, run as __main__; may start with a PEP 723 `# /// script` block"}}},
           {"dependencies",
            {{"type", "array"},
             {"items", {{"type", "string"}}},
             {"default", json::array()},
             {"description", "Extra PEP 508 requirements, merged with the script's block by name"}}},
           {"timeout_seconds",
            {{"type", "integer"},
             {"default", config.default_timeout_seconds},
             {"description", "Wall-clock limit; clamped to 1.." + std::to_string(config.max_timeout_seconds)}}},
           {"python_version",
            {{"type", "string"},
             {"description", "CPython \"X.Y\" to run on (default: the server's; check_environment lists them)"}}},
           {"session_id",
            {{"type", "string"},
             {"description", "Run as the next step of this session (create_session), in its live interpreter"}}},
           {"input_files",
            {{"type", "object"},
             {"description", "Files written into the working directory before the script: path -> text, "
                             "or path -> {\"base64\": \"...\"} for bytes"},
             {"additionalProperties",
              {{"anyOf",
                json::array({{{"type", "string"}},
                             {{"type", "object"},
                              {"properties", {{"text", {{"type", "string"}}}, {"base64", {{"type", "string"}}}}},
                              {"minProperties", 1},
                              {"maxProperties", 1}}})}}}}},
           {"output_files",
            {{"type", "array"},
             {"items", {{"type", "string"}}},
             {"description", "Glob patterns (relative to the working directory, ** for any depth) of files "
                             "to return after the script, as embedded resources"}}},
       }},
      {"required", {"script"}},
  };
  tool.output_schema = run_output_schema();
  tool.annotations = {{"title", tool.title},
                      {"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", config.policy.network}};
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    engine::RunRequest request;
    try {
      request.script = string_argument(call->arguments(), "script");
      request.dependencies = string_list_argument(call->arguments(), "dependencies");
      request.timeout_seconds =
          clamp_timeout(clamped_integer_argument(call->arguments(), "timeout_seconds", 1,
                                                 std::max(services.config.max_timeout_seconds, 1)),
                        services.config);
      request.python_version = python_version_argument(call->arguments());
      request.client = call->client();
      request.session_id = session_id_argument(call->arguments(), false);
      for (auto& f : input_files_argument(call->arguments())) {
        request.input_files.push_back({std::move(f.path), std::move(f.content)});
      }
      request.output_files = string_list_argument(call->arguments(), "output_files");
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    if (auto problem = engine::check_files(request.input_files, request.output_files)) {
      call->finish(error_result(*problem));
      return;
    }
    request.owner = call->owner();
    std::weak_ptr<ToolCall> weak = call;
    auto progress = [weak](double value, std::optional<double> total, const std::string& message) {
      if (auto c = weak.lock()) c->progress(value, total, message);
    };
    auto handle = services.engine.execute(
        std::move(request), std::move(progress), [call](engine::RunResult result) {
          if (result.service_error) call->log(LogLevel::error, *result.service_error);
          call->finish(run_call_tool_result(std::move(result)));
        });
    if (handle) {
      call->on_cancel([handle] { handle->cancel(); });
    }
  };
  return tool;
}

}  // namespace mcp::tools
