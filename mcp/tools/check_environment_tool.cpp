#include "mcp/tools/check_environment_tool.h"

#include <cctype>
#include <memory>
#include <utility>

#include "mcp/tools/arguments.h"
#include "mcp/tools/host_facts.h"
#include "mcp/tools/services.h"
#include "mcp/tools/session_tools.h"
#include "sandbox/path_search.h"
#include "sandbox/policy.h"

namespace mcp::tools {

using json = nlohmann::json;

namespace {

constexpr std::string_view kDescription =
    R"(Report the execution environment: Python version, uv, platform, sandbox backend and its real
status, timeouts, output limit and cache warming, then what was actually probed on this host
(interpreters found with their paths and libpython, bubblewrap, user namespaces, seccomp,
cgroups, network policy). Takes no arguments, changes nothing.

Call it when a run fails for environmental reasons (sandbox unavailable, wrong Python version) or
to learn which `python_version` values execute_python accepts.

Example: check_environment()
)";

std::string sandbox_status(const EnvironmentFacts& facts) {
  if (const auto it = facts.report.find("sandbox_status");
      it != facts.report.end() && it->is_string()) {
    return it->get<std::string>();
  }
  if (facts.sandbox_backend == "none") return "disabled (--sandbox-backend none): scripts run unsandboxed";
  return "unknown (the engine did not report it)";
}

// "sandbox_status" -> "Sandbox status"
std::string label(const std::string& key) {
  std::string out = key;
  for (char& c : out) {
    if (c == '_') c = ' ';
  }
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string scalar_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_null()) return "unknown";
  return value.dump();
}

bool is_scalar(const json& value) { return !value.is_object() && !value.is_array(); }

// "3.11.2 /usr/bin/python3.11 (shared libpython, warm, default)"
std::string interpreter_line(const json& in) {
  std::string line = in.value("version", std::string("?")) + " " + in.value("executable", std::string("?"));
  std::vector<std::string> traits;
  if (const auto shared = in.find("shared"); shared != in.end() && shared->is_boolean()) {
    traits.emplace_back(shared->get<bool>() ? "shared libpython" : "static: spawn path");
  }
  if (const auto warm = in.find("warm"); warm != in.end() && warm->is_boolean()) {
    traits.emplace_back(warm->get<bool>() ? "warm" : "cold");
  }
  if (in.value("default", false)) traits.emplace_back("default");
  if (!traits.empty()) {
    line += " (";
    for (std::size_t i = 0; i < traits.size(); ++i) line += (i ? ", " : "") + traits[i];
    line += ")";
  }
  return line;
}

// Renders any JSON value as indented "Label: value" lines.
void render(const std::string& key, const json& value, const std::string& indent,
            std::vector<std::string>& lines) {
  if (value.is_string() && value.get_ref<const std::string&>().empty()) return;  // nothing to say
  if (is_scalar(value)) {
    lines.push_back(indent + label(key) + ": " + scalar_text(value));
    return;
  }
  if (key == "interpreters" && value.is_array()) {
    lines.push_back(indent + "Interpreters:");
    if (value.empty()) lines.push_back(indent + "  - none found");
    for (const auto& item : value) {
      lines.push_back(indent + "  - " + (item.is_object() ? interpreter_line(item) : scalar_text(item)));
    }
    return;
  }
  if (value.is_array()) {
    bool all_scalar = true;
    for (const auto& item : value) all_scalar = all_scalar && is_scalar(item);
    if (all_scalar) {
      std::string joined;
      for (const auto& item : value) joined += (joined.empty() ? "" : ", ") + scalar_text(item);
      lines.push_back(indent + label(key) + ": " + (value.empty() ? "none" : joined));
      return;
    }
    lines.push_back(indent + label(key) + ":");
    for (const auto& item : value) {
      if (item.is_object()) {
        std::string entry;
        for (const auto& [k, v] : item.items()) {
          entry += (entry.empty() ? "" : ", ") + k + "=" + (is_scalar(v) ? scalar_text(v) : v.dump());
        }
        lines.push_back(indent + "  - " + entry);
      } else {
        lines.push_back(indent + "  - " + (is_scalar(item) ? scalar_text(item) : item.dump()));
      }
    }
    return;
  }
  lines.push_back(indent + label(key) + ":");
  for (const auto& [k, v] : value.items()) render(k, v, indent + "  ", lines);
}

}  // namespace

json report_json(const engine::EnvironmentReport& r) {
  json report;
  report["backend"] = r.backend;
  report["network"] = r.network ? "on" : "off";
  report["network_isolation"] = r.network_isolation;
  report["run_scoping"] = r.run_scoping;
  report["user_quotas"] = r.user_quotas;
  report["execution_path"] = r.execution_path;
  report["max_concurrent_runs"] = r.max_concurrent_runs;
  report["runs_in_flight"] = r.runs_in_flight;
  report["runs_queued"] = r.runs_queued;
  const auto& l = r.limits;
  report["limits"] = {{"memory_bytes", l.memory_bytes},       {"max_processes", l.max_processes},
                      {"tmpfs_bytes", l.tmpfs_bytes},         {"cpu_seconds", l.cpu_seconds},
                      {"file_size_bytes", l.file_size_bytes}, {"open_files", l.open_files}};
  report["preload"] = r.preload;
  if (r.interpreter) {
    const auto& in = *r.interpreter;
    report["interpreter"] = {{"version", in.version}, {"executable", in.executable},
                             {"prefix", in.prefix}, {"libpython", in.libpython}, {"source", in.source}};
  }
  json interpreters = json::array();
  for (const auto& s : r.interpreters) {
    const auto& in = s.interpreter;
    interpreters.push_back({{"version", in.version}, {"executable", in.executable}, {"source", in.source},
                            {"shared", in.shared()}, {"execution_path", in.shared() ? "zygote" : "spawn"},
                            {"libpython", in.libpython}, {"warm", s.warm}, {"default", s.is_default}});
  }
  report["interpreters"] = interpreters;
  if (!r.discovery_error.empty()) report["discovery_error"] = r.discovery_error;
  json zygotes = json::array();
  for (const auto& z : r.zygotes) {
    json entry = {{"interpreter", z.key}, {"python_version", z.python_version}, {"state", z.state},
                  {"rss_bytes", z.rss_bytes}, {"runs_in_flight", z.runs_in_flight}};
    if (!z.failure.empty()) entry["failure"] = z.failure;
    if (!z.warnings.empty()) entry["warnings"] = z.warnings;
    if (!z.network.empty()) entry["network"] = z.network;
    zygotes.push_back(entry);
  }
  report["zygotes"] = zygotes;
  report["cgroups"] = {{"mode", r.cgroups.mode}, {"memory", r.cgroups.memory}, {"processes", r.cgroups.processes}};
  if (!r.cgroups.note.empty()) report["cgroups"]["note"] = r.cgroups.note;
  if (r.probe) {
    const auto& p = *r.probe;
    json probe = {{"bwrap_path", p.bwrap_path},
                  {"bwrap_version", p.bwrap_version},
                  {"userns_works", p.userns_works},
                  {"seccomp_available", p.seccomp_available},
                  {"cgroup_mode", p.cgroup_mode},
                  {"memory_limit_mechanism", p.memory_limit_mechanism},
                  {"process_limit_mechanism", p.process_limit_mechanism},
                  {"file_size_limit_mechanism", p.file_size_limit_mechanism},
                  {"cpu_limit_mechanism", p.cpu_limit_mechanism},
                  {"native_ready", p.native_ready()},
                  {"problem", p.problem},
                  {"fix", p.fix}};
    json details = json::object();
    for (const auto& [k, v] : p.details) details[k] = v;
    probe["details"] = details;
    report["probe"] = probe;
  }
  if (!r.sandbox_status.empty()) report["sandbox_status"] = r.sandbox_status;
  const auto& e = r.environments;
  report["environments"] = {{"cache_dir", e.cache_dir},     {"max_bytes", e.max_bytes},
                            {"bytes", e.bytes},             {"environments", e.environments},
                            {"installer", e.installer},     {"installer_sandboxed", e.installer_sandboxed},
                            {"cache_warming", e.cache_warming}};
  return report;
}

EnvironmentFacts gather_environment_facts(const engine::EngineConfig& config,
                                          const std::optional<engine::Interpreter>& selected,
                                          const std::string& why, const engine::EnvironmentReport& engine_report) {
  json report = report_json(engine_report);
  EnvironmentFacts facts;
  if (selected) {
    facts.python_version = selected->version;
  } else {
    facts.python_version = (config.python_version ? *config.python_version + " " : std::string()) +
                           "(not available: " + why + ")";
  }
  // As the Python server says it (`uv --version`), of the uv installs really use.
  const std::string uv = sandbox::find_executable(config.uv_path).value_or("");
  facts.uv = !engine_report.environments.uv_version.empty() ? engine_report.environments.uv_version
             : uv.empty()                                   ? "not found"
                                                            : uv;
  facts.platform = platform_system() + " " + platform_machine();
  facts.sandbox_backend = std::string(sandbox::to_string(config.policy.backend));
  facts.default_timeout_seconds = config.default_timeout_seconds;
  facts.max_timeout_seconds = config.max_timeout_seconds;
  facts.max_output_bytes = config.max_output_bytes;
  facts.warm_cache = config.warm_cache;
  facts.interpreters = report["interpreters"];
  facts.report = std::move(report);
  return facts;
}

std::string environment_text(const EnvironmentFacts& facts) {
  std::vector<std::string> lines = {
      "Python version: " + facts.python_version,
      "uv: " + facts.uv,
      "Platform: " + facts.platform,
      "Sandbox backend: " + facts.sandbox_backend,
      "Sandbox status: " + sandbox_status(facts),
      "Default timeout: " + std::to_string(facts.default_timeout_seconds) + "s",
      "Max timeout: " + std::to_string(facts.max_timeout_seconds) + "s",
      "Max output: " + std::to_string(facts.max_output_bytes) + " bytes",
      std::string("Cache warming: ") + (facts.warm_cache ? "enabled" : "disabled"),
  };
  for (const auto& [key, value] : facts.report.items()) {
    if (key == "sandbox_status") continue;
    render(key, value, "", lines);
  }
  std::string text;
  for (const auto& line : lines) {
    if (!text.empty()) text += '\n';
    text += line;
  }
  return text;
}

json environment_structured(const EnvironmentFacts& facts) {
  return {
      {"python_version", facts.python_version},
      {"uv", facts.uv},
      {"platform", facts.platform},
      {"sandbox_backend", facts.sandbox_backend},
      {"sandbox_status", sandbox_status(facts)},
      {"default_timeout_seconds", facts.default_timeout_seconds},
      {"max_timeout_seconds", facts.max_timeout_seconds},
      {"max_output_bytes", facts.max_output_bytes},
      {"cache_warming", facts.warm_cache},
      {"interpreters", facts.interpreters},
      {"engine", facts.report},
  };
}

json environment_output_schema() {
  const json string = {{"type", "string"}};
  const json integer = {{"type", "integer"}};
  return {
      {"type", "object"},
      {"properties",
       {
           {"python_version", string},
           {"uv", {{"type", "string"}, {"description", "`uv --version` of the uv installs use (its path when it does not answer), or \"not found\""}}},
           {"platform", string},
           {"sandbox_backend", {{"type", "string"}, {"enum", {"native", "docker", "none"}}}},
           {"sandbox_status", {{"type", "string"}, {"description", "Isolation really in effect"}}},
           {"default_timeout_seconds", integer},
           {"max_timeout_seconds", integer},
           {"max_output_bytes", integer},
           {"cache_warming", {{"type", "boolean"}}},
           {"interpreters",
            {{"type", "array"},
             {"items",
              {{"type", "object"},
               {"properties",
                {{"version", string}, {"executable", string}, {"libpython", string},
                 {"source", string}, {"shared", {{"type", "boolean"}}}}},
               {"required", {"version", "executable"}}}}}},
           {"engine", {{"type", "object"}, {"description", "What the engine probed on this host"}}},
           {"sessions", {{"type", "object"}, {"description", "Your sessions and the session limits"}}},
       }},
      {"required",
       {"python_version", "uv", "platform", "sandbox_backend", "sandbox_status",
        "default_timeout_seconds", "max_timeout_seconds", "max_output_bytes", "cache_warming",
        "interpreters", "engine"}},
  };
}

ToolDefinition make_check_environment_tool(const Services& services) {
  ToolDefinition tool;
  tool.name = "check_environment";
  tool.title = "Check the execution environment";
  tool.description = std::string(kDescription);
  tool.input_schema = {{"type", "object"}, {"properties", json::object()}};
  tool.output_schema = environment_output_schema();
  tool.annotations = read_only_annotations(tool.title);
  tool.handler = [services](std::shared_ptr<ToolCall> call) {
    services.engine.find_interpreter(services.config.python_version, [call, services](
                                         std::optional<engine::Interpreter> selected, const std::string& why) {
      if (call->cancelled()) return;
      services.engine.environment_report([call, services, selected, why](engine::EnvironmentReport report) {
        if (call->cancelled()) return;
        auto facts = std::make_shared<EnvironmentFacts>(gather_environment_facts(services.config, selected, why, report));
        // The caller's sessions too (never another client's).
        services.engine.list_sessions(call->owner(), [call, facts](engine::SessionList sessions) {
          if (call->cancelled()) return;
          json structured = environment_structured(*facts);
          structured["sessions"] = session_list_json(sessions);
          call->finish({{"content", json::array({text_content(environment_text(*facts) + "\nSessions: " +
                                                              session_list_text(sessions))})},
                        {"structuredContent", std::move(structured)},
                        {"isError", false}});
        });
      });
    });
  };
  return tool;
}

}  // namespace mcp::tools
