// One execution request and its result: the contract between the MCP tools and the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/files/work_files.h"

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
  // Who asks: the client the MCP layer identified (its connection, token or protocol session).
  // A session is only ever found for the owner that created it.
  std::string owner;
  std::optional<std::string> session_id;  // run as the next step of this session
  std::vector<InputFile> input_files;     // checked (engine/files/work_files.h)
  std::vector<std::string> output_files;  // globs, checked
};

// What a step did to its session (RunResult::session).
struct StepReport {
  std::string session_id;
  std::uint64_t step = 0;       // the step this run created; when not kept, the one it continues from
  bool kept = false;            // false: the session continues from the state before this run
  bool snapshots = true;        // false: the interpreter runs threads, no snapshot was taken
  std::string note;             // what happened to the session, in words
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
  std::vector<OutputFile> files;   // output_files that matched, within --max-output-file-bytes
  RunUsage usage;
  std::optional<StepReport> session;  // a session's step
};

struct SessionRequest {
  std::string owner;                           // as RunRequest::owner
  std::string client;                          // as RunRequest::client (turns in the queue)
  std::vector<std::string> dependencies;       // PEP 508; the session's environment
  std::optional<std::string> python_version;   // "X.Y"; empty = the server's default
};

// One session as list_sessions and the session tools show it.
struct SessionInfo {
  std::string id;
  std::string python_version;
  std::vector<std::string> dependencies;
  std::uint64_t step = 0;              // the head: the state the next step starts from
  std::vector<std::uint64_t> kept;     // steps reset_session and fork_session can use
  std::uint64_t steps_run = 0;         // steps kept since it was created (forks: since the fork)
  std::int64_t age_seconds = 0;
  std::int64_t idle_seconds = 0;
  std::int64_t memory_bytes = -1;      // its sandbox's memory now (shared with its forks); -1 unknown
  bool running = false;                // a step is running
  bool snapshots = true;               // false: its interpreter has threads (steps run in place)
  std::string forked_from;             // "ID at step N" for a fork
  std::string shares_sandbox_with;     // ids of the other sessions in its sandbox (forks)
};

struct SessionReply {
  std::optional<std::string> error;  // the call failed or was refused: why
  bool refused = false;              // the error is about the request (unknown session, limits)
  std::optional<SessionInfo> session;
  std::string note;
};

struct SessionList {
  std::vector<SessionInfo> sessions;  // the caller's only
  unsigned max_sessions = 0;
  std::size_t total = 0;              // all owners' (the --max-sessions bound counts them all)
  unsigned idle_seconds = 0;
  unsigned snapshots = 0;
  std::string memory;                 // how a session's memory is bounded and measured
};

}  // namespace engine
