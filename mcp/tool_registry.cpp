#include "mcp/tool_registry.h"

#include <utility>

namespace mcp {

namespace {

nlohmann::json with_dialect(const nlohmann::json& schema) {
  nlohmann::json out = schema;
  if (out.is_object() && !out.contains("$schema")) out["$schema"] = kJsonSchemaDialect;
  return out;
}

}  // namespace

nlohmann::json ToolDefinition::to_json() const {
  nlohmann::json tool = {{"name", name}, {"description", description},
                         {"inputSchema", with_dialect(input_schema)}};
  if (!title.empty()) tool["title"] = title;
  if (!output_schema.is_null()) tool["outputSchema"] = with_dialect(output_schema);
  if (!annotations.is_null()) tool["annotations"] = annotations;
  return tool;
}

void ToolRegistry::add(ToolDefinition tool) {
  for (auto& existing : tools_) {
    if (existing.name == tool.name) {
      existing = std::move(tool);
      return;
    }
  }
  tools_.push_back(std::move(tool));
}

const ToolDefinition* ToolRegistry::find(std::string_view name) const {
  for (const auto& tool : tools_) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

nlohmann::json ToolRegistry::list() const {
  auto tools = nlohmann::json::array();
  for (const auto& tool : tools_) tools.push_back(tool.to_json());
  return {{"tools", std::move(tools)}};
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(tools_.size());
  for (const auto& tool : tools_) out.push_back(tool.name);
  return out;
}

nlohmann::json read_only_annotations(const std::string& title) {
  return {{"title", title},
          {"readOnlyHint", true},
          {"destructiveHint", false},
          {"idempotentHint", true},
          {"openWorldHint", false}};
}

}  // namespace mcp
