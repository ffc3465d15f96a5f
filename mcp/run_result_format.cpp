#include "mcp/run_result_format.h"

#include "engine/execution/json_string.h"
#include "engine/execution/output_capture.h"
#include "engine/execution/result_channel.h"
#include "engine/execution/utf8.h"

#include <cctype>
#include <cstdio>
#include <string_view>
#include <vector>

namespace mcp {

using json = nlohmann::json;

namespace {

double to_mb(std::int64_t bytes) {
  // One decimal is what a human (or an LLM) compares; the raw bytes are not more useful.
  const double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return static_cast<double>(static_cast<std::int64_t>(mb * 10.0 + 0.5)) / 10.0;
}

std::string one_decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

json text_item(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

// An output file's place, as a URI: its path in the run's work dir, percent-encoded.
std::string file_uri(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "sandbox://workdir/";
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// Text when the type is textual, the bytes are UTF-8 and escaping them for JSON does not make
// them larger than base64 would (control bytes cost six each): else base64, so that a reply's
// files take at most 4/3 of --max-output-file-bytes (mcp/intake.h counts on it).
bool as_text(const engine::OutputFile& file) {
  const std::size_t size = file.content.size();
  return engine::is_textual_mime(file.mime_type) && engine::sanitize_utf8(file.content) == file.content &&
         engine::json_string_size(file.content) <= (size + 2) / 3 * 4;
}

// The code point of the well-formed sequence of `length` bytes at s[i].
char32_t code_point(std::string_view s, std::size_t i, std::size_t length) {
  const auto byte = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  if (length == 1) return byte(0);
  char32_t cp = byte(0) & (0xFFu >> (length + 1));
  for (std::size_t k = 1; k < length; ++k) cp = (cp << 6) | (byte(k) & 0x3Fu);
  return cp;
}

bool shown_escaped(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string shown_file_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  char buffer[16];
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t length = engine::utf8_sequence_length(name, i);
    if (length == 0) {  // an ill-formed byte
      std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned char>(name[i]));
      out += buffer;
      ++i;
      continue;
    }
    const char32_t cp = code_point(name, i, length);
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (shown_escaped(cp)) {
      if (cp < 0x100) {
        std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(cp));
      } else {
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buffer;
    } else {
      out.append(name, i, length);
    }
    i += length;
  }
  return out;
}

std::string format_run_text(const engine::RunResult& result) {
  // Sections joined by "\n", appended in place: the streams (up to --max-output-bytes each) are
  // copied once, into the text.
  std::string text;
  text.reserve(result.stdout_stream.text.size() + result.stderr_stream.text.size() + 512);
  auto section = [&text](std::string_view title, std::string_view body = {}) {
    if (!text.empty()) text += '\n';
    text += title;
    text += body;
  };
  if (result.service_error) section(*result.service_error);
  if (!result.stdout_stream.text.empty()) section("--- stdout ---\n", result.stdout_stream.text);
  if (!result.stderr_stream.text.empty()) section("--- stderr ---\n", result.stderr_stream.text);
  if (result.return_value_repr) section("--- return_value ---\n", *result.return_value_repr);
  // What the run reported about itself (e.g. figures dropped): the script can write that
  // channel, so it comes before the trailer, never after it.
  if (!result.notes.empty()) {
    std::string notes = "--- notes ---";
    for (const auto& note : result.notes) notes += "\n" + note;
    section(notes);
  }
  if (!result.files.empty()) {
    std::string files = "--- files ---";
    for (const auto& f : result.files) {
      files += "\n" + shown_file_name(f.path) + " (" + f.mime_type + ", " + std::to_string(f.content.size()) +
               " bytes)";
    }
    section(files);
  }
  // The trailer, always last: nothing the script controls follows it.
  section("--- exit_code: " + std::to_string(result.exit_code) + " ---");
  if (result.end_reason != engine::EndReason::exit) {
    section("--- end: " + std::string(engine::to_string(result.end_reason)) + " ---");
  }
  section("--- duration_ms: " + std::to_string(result.duration_ms) + " ---");
  if (result.timed_out) section("--- timed_out: true ---");
  // Accounting, in every result: what is unknown is left out; the end reason always shows.
  std::string usage = "--- usage: wall_ms=" + std::to_string(result.usage.wall_ms);
  if (result.usage.cpu_ms >= 0) usage += " cpu_ms=" + std::to_string(result.usage.cpu_ms);
  if (result.usage.peak_memory_bytes >= 0) {
    usage += " peak_memory_mb=" + one_decimal(to_mb(result.usage.peak_memory_bytes));
  }
  section(usage + " end=" + std::string(engine::to_string(result.end_reason)) + " ---");
  if (const auto& s = result.session) {
    section("--- session: " + s->session_id + " step: " + std::to_string(s->step) +
            (s->kept ? "" : " (this run was not kept)") + " ---");
    if (!s->note.empty()) section("--- session_note: " + s->note + " ---");
  }
  return text;
}

json run_structured_content(engine::RunResult result) {
  json out = {
      {"stdout", std::move(result.stdout_stream.text)},
      {"stderr", std::move(result.stderr_stream.text)},
      {"exit_code", result.exit_code},
      {"duration_ms", result.duration_ms},
      {"timed_out", result.timed_out},
      {"stdout_truncated", result.stdout_stream.dropped_bytes},
      {"stderr_truncated", result.stderr_stream.dropped_bytes},
      {"end_reason", engine::to_string(result.end_reason)},
      {"sandbox", result.sandbox},
      {"python_version", result.python_version},
      {"execution_path", result.execution_path},
      {"images", result.images.size()},
      {"notes", result.notes},
  };
  if (result.return_value_repr) {
    json value = {{"repr", *result.return_value_repr}};
    if (result.return_value_json) value["json"] = *result.return_value_json;
    out["return_value"] = std::move(value);
  }
  json usage = {{"wall_ms", result.usage.wall_ms}, {"end_reason", engine::to_string(result.end_reason)}};
  if (result.usage.cpu_ms >= 0) usage["cpu_ms"] = result.usage.cpu_ms;
  if (result.usage.peak_memory_bytes >= 0) {
    usage["peak_memory_mb"] = to_mb(result.usage.peak_memory_bytes);
    usage["peak_memory_bytes"] = result.usage.peak_memory_bytes;
  }
  out["usage"] = std::move(usage);
  if (result.service_error) out["service_error"] = *result.service_error;
  if (!result.files.empty()) {
    json files = json::array();
    for (const auto& f : result.files) {
      files.push_back({{"path", f.path},
                       {"uri", file_uri(f.path)},
                       {"mime_type", f.mime_type},
                       {"bytes", f.content.size()},
                       {"encoding", as_text(f) ? "text" : "base64"}});
    }
    out["files"] = std::move(files);
  }
  if (const auto& s = result.session) {
    out["session"] = {{"session_id", s->session_id},
                      {"step", s->step},
                      {"kept", s->kept},
                      {"snapshots", s->snapshots},
                      {"note", s->note}};
  }
  return out;
}

json run_output_schema() {
  const json integer = {{"type", "integer"}};
  const json string = {{"type", "string"}};
  return {
      {"type", "object"},
      {"properties",
       {
           {"stdout", {{"type", "string"}, {"description", "Standard output as kept (head + marker + tail past the limit)"}}},
           {"stderr", {{"type", "string"}, {"description", "Standard error as kept"}}},
           {"exit_code", {{"type", "integer"}, {"description", "Exit status; -N when killed by signal N, -9 on timeout"}}},
           {"duration_ms", integer},
           {"timed_out", {{"type", "boolean"}}},
           {"stdout_truncated", {{"type", "integer"}, {"minimum", 0}, {"description", "Bytes of stdout left out"}}},
           {"stderr_truncated", {{"type", "integer"}, {"minimum", 0}, {"description", "Bytes of stderr left out"}}},
           {"end_reason",
            {{"type", "string"},
             {"enum", {"exit", "signal", "timeout", "memory_limit", "cpu_limit", "process_limit",
                       "file_size_limit", "cancelled", "sandbox_error", "install_failed", "refused"}}}},
           {"sandbox", {{"type", "string"}, {"description", "Isolation that really applied"}}},
           {"python_version", string},
           {"execution_path",
            {{"type", "string"},
             {"description", "zygote (forked from a warm interpreter), spawn, or session (a session's step)"}}},
           {"images", {{"type", "integer"}, {"minimum", 0}, {"description", "Number of image items in content"}}},
           {"notes", {{"type", "array"}, {"items", {{"type", "string"}}}}},
           {"return_value",
            {{"type", "object"},
             {"description", "Value of the script's last expression"},
             {"properties", {{"repr", string}, {"json", json::object()}}},
             {"required", {"repr"}}}},
           {"usage",
            {{"type", "object"},
             {"description", "Accounting of the run: wall time, CPU time (user+sys of its whole process tree), peak memory"},
             {"properties",
              {{"wall_ms", integer},
               {"cpu_ms", integer},
               {"peak_memory_mb", {{"type", "number"}}},
               {"peak_memory_bytes", integer},
               {"end_reason", string}}},
             {"required", {"wall_ms", "end_reason"}}}},
           {"service_error", {{"type", "string"}, {"description", "Set when the service itself failed"}}},
           {"files",
            {{"type", "array"},
             {"description", "output_files returned, each also an embedded resource in content"},
             {"items",
              {{"type", "object"},
               {"properties",
                {{"path", string}, {"uri", string}, {"mime_type", string}, {"bytes", integer},
                 {"encoding", {{"type", "string"}, {"enum", {"text", "base64"}}}}}},
               {"required", {"path", "uri", "mime_type", "bytes", "encoding"}}}}}},
           {"session",
            {{"type", "object"},
             {"description", "For a run in a session: the step it created (kept), or the step the session "
                             "continues from (not kept: timeout, cancel, crash)"},
             {"properties",
              {{"session_id", string},
               {"step", {{"type", "integer"}, {"minimum", 0}}},
               {"kept", {{"type", "boolean"}}},
               {"snapshots", {{"type", "boolean"}, {"description", "false: the interpreter runs threads, no snapshot"}}},
               {"note", string}}},
             {"required", {"session_id", "step", "kept", "snapshots"}}}},
       }},
      {"required",
       {"stdout", "stderr", "exit_code", "duration_ms", "timed_out", "stdout_truncated",
        "stderr_truncated", "end_reason"}},
  };
}

json run_call_tool_result(engine::RunResult result) {
  json content = json::array({text_item(format_run_text(result))});
  for (const auto& image : result.images) {
    content.push_back({{"type", "image"}, {"data", image.data_base64}, {"mimeType", image.mime_type}});
  }
  for (const auto& f : result.files) {
    json resource = {{"uri", file_uri(f.path)}, {"mimeType", f.mime_type}};
    if (as_text(f)) {
      resource["text"] = f.content;
    } else {
      resource["blob"] = engine::base64_encode(f.content);
    }
    content.push_back({{"type", "resource"}, {"resource", std::move(resource)}});
  }
  const bool is_error = result.service_error.has_value();
  return {{"content", std::move(content)},
          // Last: the streams move into it (an output of megabytes is not copied again).
          {"structuredContent", run_structured_content(std::move(result))},
          {"isError", is_error}};
}

}  // namespace mcp
