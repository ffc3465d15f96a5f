// One execution request and its result: the contract between the MCP tools and the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace engine {

// How a run ended (text `--- end: <reason> ---`, structuredContent `end_reason`).
enum class EndReason {
  exit, signal, timeout, memory_limit, cpu_limit, process_limit, file_size_limit, cancelled,
  sandbox_error, install_failed,
  refused  // nothing ran: the call asks for what this server cannot give (a version, requires-python)
};
std::string_view to_string(EndReason reason);

struct RunRequest {
  std::string script;
  std::vector<std::string> dependencies;     // merged with the script's PEP 723 block
  int timeout_seconds = 30;                  // already clamped to [1, --max-timeout]
  std::optional<std::string> python_version;  // "X.Y"; empty = the server's default
  // Who asked (an HTTP client's address; empty on stdio, one client): runs of different clients
  // take turns for the slots (engine/scheduler.h).
  std::string client;
};

// One output stream as kept: head + marker + tail when over --max-output-bytes.
struct CapturedStream {
  std::string text;               // valid UTF-8, within the limit (marker included)
  std::uint64_t dropped_bytes = 0;  // bytes left out between head and tail
};

struct Image {
  std::string mime_type = "image/png";
  std::string data_base64;
};

struct RunUsage {
  std::int64_t wall_ms = 0;
  std::int64_t cpu_ms = -1;             // user+sys of the whole process tree; -1 = unknown
  std::int64_t peak_memory_bytes = -1;  // -1 = unknown
};

struct RunResult {
  CapturedStream stdout_stream;
  CapturedStream stderr_stream;
  int exit_code = 0;       // -N when killed by signal N; -9 on timeout
  bool timed_out = false;
  EndReason end_reason = EndReason::exit;
  std::int64_t duration_ms = 0;
  // Set when the service itself failed (sandbox unavailable, zygote lost, unknown version):
  // the tool result then has isError: true and this text leads it.
  std::optional<std::string> service_error;
  // What really ran it, for structuredContent and honest reporting.
  std::string sandbox;         // "native", "none (unsandboxed)"
  std::string python_version;  // "3.11.2"
  std::string execution_path;  // "zygote" (forked) or "spawn" (static interpreter)
  // Rich results (value of the last expression, figures).
  std::optional<std::string> return_value_repr;
  std::optional<nlohmann::json> return_value_json;
  std::vector<Image> images;
  std::vector<std::string> notes;  // e.g. "2 figures dropped (--max-images 4)"
  RunUsage usage;
};

}  // namespace engine
