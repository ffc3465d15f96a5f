// PEP 508 environment markers (engine/packaging/markers.*).
// Input: one marker expression.
// Properties: nothing throws; the two syntax APIs agree; an error's position lies within the
// text; evaluation of a marker with a syntax error is false, and evaluation of a valid one is
// deterministic.
#include <string>

#include "engine/packaging/markers.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view marker = fuzz::as_text(data, size);
  const auto syntax = engine::markers::check_syntax(marker);
  const auto message = engine::marker_syntax_error(marker);
  FUZZ_CHECK(syntax.has_value() == message.has_value());
  if (syntax) {
    FUZZ_CHECK(!syntax->message.empty());
    FUZZ_CHECK(syntax->position <= marker.size());
  }
  engine::MarkerEnvironment env;
  env.python_version = "3.11";
  env.python_full_version = "3.11.2";
  env.platform_release = "6.1.0-18-amd64";
  env.platform_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)";
  const bool first = engine::evaluate_marker(marker, env);
  if (syntax) FUZZ_CHECK(!first);
  FUZZ_CHECK(engine::evaluate_marker(marker, env) == first);
  return 0;
}
