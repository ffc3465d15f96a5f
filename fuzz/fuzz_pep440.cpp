// PEP 440 versions and specifiers (engine/packaging/pep440.*).
// Input: "<version>\n<specifier set>" (without '\n': the same text is tried as both).
// Properties: nothing throws; a parsed version's normal form parses to an equal version whose
// normal form is the same (idempotent), and orders equal to it; the ordering is antisymmetric
// against a second version; a specifier set that validates also parses, and matching the
// version against it agrees between the two APIs.
#include <string>

#include "engine/packaging/pep440.h"
#include "fuzz/fuzz_check.h"

namespace p = engine::pep440;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const auto nl = input.find('\n');
  const std::string_view version_text = input.substr(0, nl);
  const std::string_view spec_text = nl == std::string_view::npos ? input : input.substr(nl + 1);

  const auto version = p::parse_version(version_text);
  if (version) {
    const std::string normal = version->str();
    const auto again = p::parse_version(normal);
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(again->str() == normal);
    FUZZ_CHECK(*again == *version);
    FUZZ_CHECK((*again <=> *version) == std::strong_ordering::equal);
    FUZZ_CHECK(version->public_version() <= *version);
    FUZZ_CHECK(p::parse_version(version->base_version().str()).has_value());
    if (const auto other = p::parse_version(spec_text)) {
      const auto ab = *version <=> *other;
      const auto ba = *other <=> *version;
      FUZZ_CHECK((ab == std::strong_ordering::less) == (ba == std::strong_ordering::greater));
      FUZZ_CHECK((ab == std::strong_ordering::equal) == (ba == std::strong_ordering::equal));
      FUZZ_CHECK((ab == std::strong_ordering::equal) == (version->str() == other->str()) ||
                 ab == std::strong_ordering::equal);
    }
  }

  std::string error;
  const bool valid = engine::is_valid_specifier_set(spec_text, &error);
  std::string parse_error;
  const auto set = p::parse_specifier_set(spec_text, &parse_error);
  FUZZ_CHECK(valid == set.has_value());
  if (!valid) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  for (const auto& spec : *set) {
    std::string one_error;
    const auto reparsed = p::parse_specifier(spec.str(), &one_error);
    FUZZ_CHECK(reparsed.has_value());
    FUZZ_CHECK(reparsed->op == spec.op && reparsed->wildcard == spec.wildcard);
  }
  FUZZ_CHECK(engine::specifier_set_contains(spec_text, version_text) ==
             p::contains(*set, version_text));
  return 0;
}
