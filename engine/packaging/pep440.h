// PEP 440 versions and version specifiers: parsing, normalisation, ordering and matching.
// Most code needs only is_valid_specifier_set() and specifier_set_contains(); the parsed forms
// (engine::pep440) serve marker evaluation and environment checks.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine {

// PEP 440 specifier set validation ("", ">=3.9", ">=3.9,<3.13", "==3.11.*", "~=3.10").
bool is_valid_specifier_set(std::string_view spec, std::string* error);
// Whether `version` ("3.11.2") satisfies the specifier set (PEP 440 ordering, wildcards, ~=).
// Pre-releases are allowed; false when `spec` or `version` is invalid.
bool specifier_set_contains(std::string_view spec, std::string_view version);

}  // namespace engine

namespace engine::pep440 {

// A parsed version. Numbers are kept as decimal digit strings without leading zeros, so versions
// with numbers beyond 64 bits (date-based releases) still order correctly.
struct Version {
  std::string epoch = "0";
  std::vector<std::string> release;
  // Pre-release phase: 0 = a, 1 = b, 2 = rc.
  std::optional<std::pair<int, std::string>> pre;
  std::optional<std::string> post;
  std::optional<std::string> dev;
  std::vector<std::string> local;  // lowercase segments; numeric ones without leading zeros

  bool is_prerelease() const { return pre.has_value() || dev.has_value(); }
  bool is_postrelease() const { return post.has_value(); }
  Version public_version() const;  // without the local label
  Version base_version() const;    // epoch and release only
  std::string str() const;         // the normalised form, e.g. "1!2.0rc1.post3.dev4+ubuntu.1"
};

// Parses a version (leading "v", surrounding whitespace and the spelling variants of PEP 440
// are accepted and normalised). nullopt when `text` is not a PEP 440 version.
std::optional<Version> parse_version(std::string_view text);

// PEP 440 ordering: trailing zeros of the release do not matter (1.0 == 1.0.0); dev < pre <
// release < post; a local label sorts after the same public version.
std::strong_ordering operator<=>(const Version& a, const Version& b);
bool operator==(const Version& a, const Version& b);

enum class Operator { compatible, equal, not_equal, less_equal, greater_equal, less, greater,
                      arbitrary };
std::string_view to_string(Operator op);

// One clause of a specifier set, e.g. ">=3.9" or "==3.11.*".
struct Specifier {
  Operator op = Operator::equal;
  std::string version_text;  // as written after the operator, trimmed
  bool wildcard = false;     // "==X.Y.*" / "!=X.Y.*"
  Version version;           // parsed (without the ".*"); unused for ===
  std::string str() const;   // operator + version_text
};

// Parses one clause; on failure returns nullopt and sets *error to a reason naming PEP 440.
std::optional<Specifier> parse_specifier(std::string_view text, std::string* error);
// Comma-separated clauses; "" (or only whitespace) is the empty set, which matches everything.
std::optional<std::vector<Specifier>> parse_specifier_set(std::string_view text,
                                                          std::string* error);

// Whether `candidate` satisfies the clause. Pre-releases are allowed (the interpreter or the
// installed distribution is what it is; there is no candidate list to filter). `raw_candidate`
// is the text as written, used by ===; an unparsable candidate only ever matches ===.
bool contains(const Specifier& spec, const std::optional<Version>& candidate,
              std::string_view raw_candidate);
bool contains(const std::vector<Specifier>& set, std::string_view candidate);

}  // namespace engine::pep440
