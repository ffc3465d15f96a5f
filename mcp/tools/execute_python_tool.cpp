#include "mcp/tools/execute_python_tool.h"

#include <algorithm>
#include <utility>

#include "mcp/run_result_format.h"
#include "mcp/tools/arguments.h"
#include "mcp/tools/services.h"

namespace mcp::tools {

using json = nlohmann::json;

int clamp_timeout(std::optional<std::int64_t> requested, const engine::EngineConfig& config) {
  const std::int64_t value = requested.value_or(config.default_timeout_seconds);
  return static_cast<int>(std::clamp<std::int64_t>(value, 1, config.max_timeout_seconds));
}

std::string execute_python_description(const engine::EngineConfig& config) {
  const auto& limits = config.policy.limits;
  const bool sandboxed = config.policy.backend != sandbox::Backend::none;
  std::string text =
      "Run a Python script in a fresh, isolated sandbox and return its output.\n\n"
      "Each call runs `script` as __main__ in a new process (forked from a pre-warmed CPython, so "
      "startup costs about a millisecond). Nothing survives between calls: no files, variables "
      "or installed packages. The working directory (also $HOME and $TMPDIR) is an empty "
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
    text += "; memory " + std::to_string(limits.memory_bytes >> 20) + " MiB; " +
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
          clamp_timeout(integer_argument(call->arguments(), "timeout_seconds"), services.config);
      request.python_version = python_version_argument(call->arguments());
      request.client = call->client();
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    std::weak_ptr<ToolCall> weak = call;
    auto progress = [weak](double value, std::optional<double> total, const std::string& message) {
      if (auto c = weak.lock()) c->progress(value, total, message);
    };
    auto handle = services.engine.execute(
        std::move(request), std::move(progress), [call](engine::RunResult result) {
          if (result.service_error) call->log(LogLevel::error, *result.service_error);
          call->finish(run_call_tool_result(result));
        });
    if (handle) {
      call->on_cancel([handle] { handle->cancel(); });
    }
  };
  return tool;
}

}  // namespace mcp::tools
