#include "mcp/tools/validate_script_tool.h"

#include <exception>
#include <utility>

#include "engine/interpreters/interpreter.h"
#include "engine/packaging/script_metadata.h"
#include "mcp/tools/arguments.h"
#include "mcp/tools/services.h"

namespace mcp::tools {

using json = nlohmann::json;

namespace {

// The constraint reported when the block has none: the interpreter that would run the script,
// written as the Python server writes its own default (">=X.Y").
std::string effective_requires_python(const engine::ScriptValidation& validation,
                                      const engine::Interpreter& interpreter) {
  if (validation.requires_python) return *validation.requires_python;
  return ">=" + interpreter.major_minor;
}

std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

constexpr std::string_view kDescription =
    R"(Check a Python script's inline metadata and dependencies WITHOUT running it.

Parses the PEP 723 block (`# /// script` ... `# ///`), checks every dependency against PEP 508 and
`requires-python` against PEP 440, and checks both against the interpreter that would run the
script (markers such as `; python_version < "3.10"` are evaluated for it). The `dependencies`
argument is merged with the block by package name; the argument wins.

Answer: `VALID`, then `requires-python: <spec>` and `dependencies (N):` with one `  - <spec>` line
each (or `dependencies: none`); otherwise `INVALID: <reason>` naming the offending line or spec.
Nothing is installed or executed; use it before execute_python when unsure about a block.

Example: validate_script(script="# /// script\n# requires-python = \">=3.10\"\n# dependencies = [\"requests>=2.31\"]\n# ///\nimport requests")
)";

}  // namespace

std::string validation_text(const engine::ScriptValidation& validation,
                            const engine::Interpreter& interpreter) {
  if (!validation.valid) {
    const std::string reason =
        validation.errors.empty() ? std::string("invalid script metadata") : joined(validation.errors, "; ");
    return "INVALID: " + reason;
  }
  std::vector<std::string> lines = {"VALID",
                                    "requires-python: " + effective_requires_python(validation, interpreter)};
  if (validation.dependencies.empty()) {
    lines.emplace_back("dependencies: none");
  } else {
    lines.push_back("dependencies (" + std::to_string(validation.dependencies.size()) + "):");
    for (const auto& requirement : validation.dependencies) lines.push_back("  - " + requirement.raw);
  }
  if (!validation.warnings.empty()) {
    lines.emplace_back("warnings:");
    for (const auto& warning : validation.warnings) lines.push_back("  - " + warning);
  }
  return joined(lines, "\n");
}

json validation_structured(const engine::ScriptValidation& validation,
                           const engine::Interpreter& interpreter) {
  json dependencies = json::array();
  for (const auto& requirement : validation.dependencies) dependencies.push_back(requirement.raw);
  return {
      {"valid", validation.valid},
      {"requires_python", effective_requires_python(validation, interpreter)},
      {"dependencies", std::move(dependencies)},
      {"errors", validation.errors},
      {"warnings", validation.warnings},
      {"python_version", interpreter.version},
  };
}

json validation_output_schema() {
  const json strings = {{"type", "array"}, {"items", {{"type", "string"}}}};
  return {
      {"type", "object"},
      {"properties",
       {
           {"valid", {{"type", "boolean"}}},
           {"requires_python",
            {{"type", "string"},
             {"description", "The block's requires-python, or the interpreter's own constraint"}}},
           {"dependencies", {{"type", "array"}, {"items", {{"type", "string"}}},
                             {"description", "Merged PEP 508 requirements, in order"}}},
           {"errors", strings},
           {"warnings", strings},
           {"python_version", {{"type", "string"}, {"description", "Interpreter validated against"}}},
       }},
      {"required", {"valid", "requires_python", "dependencies", "errors", "warnings", "python_version"}},
  };
}

ToolDefinition make_validate_script_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "validate_script";
  tool.title = "Validate a Python script's metadata";
  tool.description = std::string(kDescription);
  tool.input_schema = {
      {"type", "object"},
      {"properties",
       {
           {"script",
            {{"type", "string"},
             {"description", "Python source to check; may start with a PEP 723 `# /// script` block"}}},
           {"dependencies",
            {{"type", "array"},
             {"items", {{"type", "string"}}},
             {"default", json::array()},
             {"description", "Extra PEP 508 requirements such as \"pandas>=2.2\", merged with the block"}}},
           {"python_version",
            {{"type", "string"},
             {"description", "Interpreter \"X.Y\" to check against (default: the server's)"}}},
       }},
      {"required", {"script"}},
  };
  tool.output_schema = validation_output_schema();
  tool.annotations = read_only_annotations(tool.title);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    std::string script;
    std::vector<std::string> dependencies;
    std::optional<std::string> version;
    try {
      script = string_argument(call->arguments(), "script");
      dependencies = string_list_argument(call->arguments(), "dependencies");
      version = python_version_argument(call->arguments());
    } catch (const ArgumentError& e) {
      call->finish(error_result(e.what()));
      return;
    }
    if (!version) version = services.config.python_version;
    services.engine.find_interpreter(version, [call, script = std::move(script),
                                               dependencies = std::move(dependencies)](
                                              std::optional<engine::Interpreter> interpreter,
                                              const std::string& why) {
      if (call->cancelled()) return;
      if (!interpreter) {
        call->finish(error_result(why));
        return;
      }
      try {
        const auto validation =
            engine::validate_script(script, dependencies, engine::marker_environment(*interpreter));
        call->finish({{"content", json::array({text_content(validation_text(validation, *interpreter))})},
                      {"structuredContent", validation_structured(validation, *interpreter)},
                      {"isError", false}});
      } catch (const std::exception& e) {
        call->finish(error_result(std::string("validate_script failed: ") + e.what()));
      }
    });
  };
  return tool;
}

}  // namespace mcp::tools
