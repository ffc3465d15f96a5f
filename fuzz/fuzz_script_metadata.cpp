// PEP 723 extraction and its TOML (engine/packaging/script_metadata.*), then validate_script with
// the block's requirements (PEP 508/440/markers) checked against an interpreter.
// Input: byte 0 selects the `dependencies` parameter, the rest is the script.
// Properties: nothing throws or crashes; line numbers point inside the script; an invalid
// validation says why.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/packaging/script_metadata.h"
#include "fuzz/fuzz_check.h"

namespace {

int line_count(std::string_view text) {
  int lines = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++lines;
    if (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')) ++lines;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view script = fuzz::as_text(data + 1, size - 1);
  const int lines = line_count(script);

  const engine::ScriptMetadata meta = engine::parse_script_metadata(script);
  if (meta.has_block) {
    FUZZ_CHECK(meta.first_line >= 1 && meta.first_line < meta.last_line && meta.last_line <= lines);
    FUZZ_CHECK(meta.dependency_lines.size() == meta.dependencies.size() || !meta.errors.empty());
    for (int l : meta.dependency_lines) FUZZ_CHECK(l > meta.first_line && l < meta.last_line);
  } else {
    FUZZ_CHECK(meta.dependencies.empty() && !meta.requires_python);
  }
  for (const auto& e : meta.errors) {
    FUZZ_CHECK(!e.message.empty());
    FUZZ_CHECK(e.line >= 0 && e.line <= lines && e.column >= 0);
  }

  static const std::vector<std::vector<std::string>> parameters = {
      {}, {"numpy"}, {"requests[security]>=2.0; python_version >= '3.8'"}, {"bad name!"}};
  engine::MarkerEnvironment env;
  env.python_version = (data[0] & 0x80) ? "" : "3.11";
  env.python_full_version = (data[0] & 0x80) ? "" : "3.11.2";
  const auto validation =
      engine::validate_script(script, parameters[data[0] % parameters.size()], env);
  if (!validation.valid) FUZZ_CHECK(!validation.errors.empty());
  if (validation.valid) FUZZ_CHECK(validation.errors.empty());
  return 0;
}
