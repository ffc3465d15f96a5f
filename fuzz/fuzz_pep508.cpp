// PEP 508 requirements (engine/packaging/pep508.*).
// Input: one requirement string.
// Properties: parse never throws; an accepted requirement has a non-empty normalised name that
// normalisation leaves unchanged, its specifier and marker are themselves valid, and its raw
// text parses again to the same requirement; a refusal says why.
#include <string>

#include "engine/packaging/markers.h"
#include "engine/packaging/pep440.h"
#include "engine/packaging/pep508.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  std::string error;
  const auto req = engine::parse_requirement(text, &error);
  if (!req) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(!req->name.empty());
  FUZZ_CHECK(!req->normalized_name.empty());
  FUZZ_CHECK(engine::normalize_name(req->normalized_name) == req->normalized_name);
  FUZZ_CHECK(engine::normalize_name(req->name) == req->normalized_name);
  std::string spec_error;
  FUZZ_CHECK(engine::is_valid_specifier_set(req->specifier, &spec_error));
  if (!req->marker.empty()) FUZZ_CHECK(!engine::marker_syntax_error(req->marker));

  std::string again_error;
  const auto again = engine::parse_requirement(req->raw, &again_error);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->normalized_name == req->normalized_name);
  FUZZ_CHECK(again->extras == req->extras);
  FUZZ_CHECK(again->specifier == req->specifier);
  FUZZ_CHECK(again->url == req->url);
  FUZZ_CHECK(again->marker == req->marker);

  const auto merged = engine::merge_requirements({*req}, {*req});
  FUZZ_CHECK(merged.size() == 1);
  return 0;
}
