#include "engine/packaging/pep440.h"

#include <algorithm>
#include <array>


namespace engine::pep440 {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); }
bool is_separator(char c) { return c == '-' || c == '_' || c == '.'; }
// Python's str.isspace() for ASCII, which is what the PEP 440 regex's \s sees in practice.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string strip_leading_zeros(std::string_view digits) {
  std::size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  return std::string(digits.substr(i));
}

// Numbers are digit strings without leading zeros: longer is larger, else lexicographic.
std::strong_ordering compare_numbers(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() <=> b.size();
  const int c = a.compare(b);
  return c < 0 ? std::strong_ordering::less
               : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
}

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

// A cursor over the lowercased version text, mirroring the PEP 440 regex group by group.
class VersionScanner {
 public:
  explicit VersionScanner(std::string_view s) : s_(s) {}

  std::optional<Version> parse(bool allow_wildcard, bool* wildcard) {
    Version v;
    if (peek() == 'v') ++pos_;
    // Epoch: digits followed by '!'.
    const std::size_t start = pos_;
    std::string_view digits = take_digits();
    if (!digits.empty() && peek() == '!') {
      v.epoch = strip_leading_zeros(digits);
      ++pos_;
      digits = take_digits();
    } else if (digits.empty()) {
      pos_ = start;
    }
    if (digits.empty()) return std::nullopt;
    v.release.push_back(strip_leading_zeros(digits));
    while (peek() == '.' && is_digit(peek(1))) {
      ++pos_;
      v.release.push_back(strip_leading_zeros(take_digits()));
    }
    if (allow_wildcard && s_.substr(pos_) == ".*") {
      *wildcard = true;
      pos_ += 2;
      return v;
    }
    parse_pre(v);
    parse_post(v);
    parse_dev(v);
    if (peek() == '+' && !parse_local(v)) return std::nullopt;
    if (pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }
  std::string_view take_digits() {
    const std::size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  bool take_word(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void skip_separator() {
    if (is_separator(peek())) ++pos_;
  }
  // [-_.]? NUMBER? after a phase word; implicit number 0.
  std::string optional_number() {
    skip_separator();
    const std::string_view digits = take_digits();
    return digits.empty() ? std::string("0") : strip_leading_zeros(digits);
  }

  void parse_pre(Version& v) {
    const std::size_t start = pos_;
    skip_separator();
    // Longest spelling first, as the regex alternation does.
    static constexpr std::array<std::pair<std::string_view, int>, 8> kPhases{{
        {"alpha", 0}, {"a", 0}, {"beta", 1}, {"b", 1}, {"preview", 2}, {"pre", 2}, {"c", 2},
        {"rc", 2}}};
    for (const auto& [word, phase] : kPhases) {
      if (take_word(word)) {
        v.pre = std::make_pair(phase, optional_number());
        return;
      }
    }
    pos_ = start;
  }

  void parse_post(Version& v) {
    const std::size_t start = pos_;
    if (peek() == '-' && is_digit(peek(1))) {  // implicit post release: "1.0-1"
      ++pos_;
      v.post = strip_leading_zeros(take_digits());
      return;
    }
    skip_separator();
    if (take_word("post") || take_word("rev") || take_word("r")) {
      v.post = optional_number();
      return;
    }
    pos_ = start;
  }

  void parse_dev(Version& v) {
    const std::size_t start = pos_;
    skip_separator();
    if (take_word("dev")) {
      v.dev = optional_number();
      return;
    }
    pos_ = start;
  }

  // "+" segment ([-_.] segment)*, segments of [a-z0-9]+.
  bool parse_local(Version& v) {
    ++pos_;
    while (true) {
      const std::size_t start = pos_;
      while (is_lower_alnum(peek())) ++pos_;
      if (pos_ == start) return false;
      const std::string_view segment = s_.substr(start, pos_ - start);
      v.local.push_back(is_number(segment) ? strip_leading_zeros(segment) : std::string(segment));
      if (!is_separator(peek())) return true;
      ++pos_;
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// Ordering helpers for the optional parts: a rank of -1/+1 stands for -infinity/+infinity.
struct Key {
  int rank = 0;
  int phase = 0;
  std::string_view number;
};

std::strong_ordering compare_keys(const Key& a, const Key& b) {
  if (a.rank != b.rank) return a.rank <=> b.rank;
  if (a.rank != 0) return std::strong_ordering::equal;
  if (a.phase != b.phase) return a.phase <=> b.phase;
  return compare_numbers(a.number, b.number);
}

Key pre_key(const Version& v) {
  // A dev release of the final version (1.0.dev1) sorts before its pre-releases.
  if (!v.pre && !v.post && v.dev) return {-1, 0, {}};
  if (!v.pre) return {1, 0, {}};
  return {0, v.pre->first, v.pre->second};
}
Key post_key(const Version& v) { return v.post ? Key{0, 0, *v.post} : Key{-1, 0, {}}; }
Key dev_key(const Version& v) { return v.dev ? Key{0, 0, *v.dev} : Key{1, 0, {}}; }

std::strong_ordering compare_local(const std::vector<std::string>& a,
                                   const std::vector<std::string>& b) {
  // No local label sorts first; numeric segments sort after alphanumeric ones.
  if (a.empty() || b.empty()) return !a.empty() <=> !b.empty();
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const bool an = is_number(a[i]);
    const bool bn = is_number(b[i]);
    if (an != bn) return an <=> bn;
    if (an) {
      if (auto c = compare_numbers(a[i], b[i]); c != 0) return c;
    } else if (const int c = a[i].compare(b[i]); c != 0) {
      return c <=> 0;
    }
  }
  return a.size() <=> b.size();
}

// Release prefix match with zero padding of the candidate: "3.11.2" starts with "3.11".
bool release_starts_with(const Version& candidate, const std::string& epoch,
                         const std::vector<std::string>& prefix) {
  if (candidate.epoch != epoch) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    const std::string_view part =
        i < candidate.release.size() ? std::string_view(candidate.release[i]) : "0";
    if (part != prefix[i]) return false;
  }
  return true;
}

bool equal_match(const Specifier& spec, const Version& candidate) {
  if (spec.wildcard) return release_starts_with(candidate, spec.version.epoch, spec.version.release);
  if (!spec.version.local.empty()) return candidate == spec.version;
  return candidate.public_version() == spec.version;
}

bool same_base(const Version& a, const Version& b) { return a.base_version() == b.base_version(); }

}  // namespace

Version Version::public_version() const {
  Version v = *this;
  v.local.clear();
  return v;
}

Version Version::base_version() const {
  Version v;
  v.epoch = epoch;
  v.release = release;
  return v;
}

std::string Version::str() const {
  std::string out;
  if (epoch != "0") out += epoch + "!";
  for (std::size_t i = 0; i < release.size(); ++i) {
    if (i) out += '.';
    out += release[i];
  }
  if (pre) {
    static constexpr std::array<std::string_view, 3> kNames{"a", "b", "rc"};
    out += kNames[static_cast<std::size_t>(pre->first)];
    out += pre->second;
  }
  if (post) out += ".post" + *post;
  if (dev) out += ".dev" + *dev;
  for (std::size_t i = 0; i < local.size(); ++i) {
    out += i ? '.' : '+';
    out += local[i];
  }
  return out;
}

std::optional<Version> parse_version(std::string_view text) {
  const std::string lowered = lowercase(trim(text));
  bool wildcard = false;
  return VersionScanner(lowered).parse(false, &wildcard);
}

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  if (auto c = compare_numbers(a.epoch, b.epoch); c != 0) return c;
  const std::size_t n = std::max(a.release.size(), b.release.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view x = i < a.release.size() ? std::string_view(a.release[i]) : "0";
    const std::string_view y = i < b.release.size() ? std::string_view(b.release[i]) : "0";
    if (auto c = compare_numbers(x, y); c != 0) return c;
  }
  if (auto c = compare_keys(pre_key(a), pre_key(b)); c != 0) return c;
  if (auto c = compare_keys(post_key(a), post_key(b)); c != 0) return c;
  if (auto c = compare_keys(dev_key(a), dev_key(b)); c != 0) return c;
  return compare_local(a.local, b.local);
}

bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

std::string_view to_string(Operator op) {
  switch (op) {
    case Operator::compatible: return "~=";
    case Operator::equal: return "==";
    case Operator::not_equal: return "!=";
    case Operator::less_equal: return "<=";
    case Operator::greater_equal: return ">=";
    case Operator::less: return "<";
    case Operator::greater: return ">";
    case Operator::arbitrary: return "===";
  }
  return "==";
}

std::string Specifier::str() const { return std::string(to_string(op)) + version_text; }

std::optional<Specifier> parse_specifier(std::string_view text, std::string* error) {
  const std::string_view clause = trim(text);
  auto fail = [&](const std::string& reason) -> std::optional<Specifier> {
    if (error) *error = "'" + std::string(clause) + "' is not a valid PEP 440 version specifier: " + reason;
    return std::nullopt;
  };
  // Longest operators first so "===" is not read as "==" and "<=" not as "<".
  static constexpr std::array<std::pair<std::string_view, Operator>, 8> kOperators{{
      {"===", Operator::arbitrary}, {"~=", Operator::compatible}, {"==", Operator::equal},
      {"!=", Operator::not_equal}, {"<=", Operator::less_equal}, {">=", Operator::greater_equal},
      {"<", Operator::less}, {">", Operator::greater}}};
  Specifier spec;
  std::size_t op_len = 0;
  for (const auto& [token, op] : kOperators) {
    if (clause.substr(0, token.size()) == token) {
      spec.op = op;
      op_len = token.size();
      break;
    }
  }
  if (op_len == 0) {
    if (clause.empty()) return fail("it is empty");
    if (clause.front() == '=') return fail("'=' is not an operator; use '=='");
    return fail("it must start with an operator (~=, ==, !=, <=, >=, <, >, ===), e.g. '>=3.9'");
  }
  spec.version_text = std::string(trim(clause.substr(op_len)));
  const std::string_view op_name = to_string(spec.op);
  if (spec.version_text.empty()) return fail("a version must follow '" + std::string(op_name) + "'");
  if (std::any_of(spec.version_text.begin(), spec.version_text.end(), is_space)) {
    return fail("'" + spec.version_text + "' contains whitespace");
  }
  if (spec.op == Operator::arbitrary) return spec;  // === compares strings; anything goes

  const std::string lowered = lowercase(spec.version_text);
  bool wildcard = false;
  std::optional<Version> version = VersionScanner(lowered).parse(true, &wildcard);
  if (!version) {
    if (lowered.find('*') != std::string::npos) {
      return fail("a wildcard may only end the release number, as in '==3.11.*'");
    }
    return fail("'" + spec.version_text + "' is not a version (PEP 440 versions look like "
                "1.2, 2.0.1rc1, 1!3.0.post2.dev1)");
  }
  spec.version = std::move(*version);
  spec.wildcard = wildcard;
  const bool equality = spec.op == Operator::equal || spec.op == Operator::not_equal;
  if (wildcard && !equality) {
    return fail("a '.*' wildcard is only allowed with == and !=");
  }
  if (!spec.version.local.empty() && !equality) {
    return fail("a local version label ('+...') is only allowed with == and !=");
  }
  if (spec.op == Operator::compatible && spec.version.release.size() < 2) {
    return fail("'~=' needs at least two release numbers, e.g. '~=" + spec.version_text + ".0'");
  }
  return spec;
}

std::optional<std::vector<Specifier>> parse_specifier_set(std::string_view text,
                                                          std::string* error) {
  std::vector<Specifier> set;
  if (trim(text).empty()) return set;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view clause =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (trim(clause).empty()) {
      if (error) {
        *error = "'" + std::string(trim(text)) + "' is not a valid PEP 440 specifier set: it has "
                 "an empty clause (clauses are separated by single commas, e.g. '>=3.9,<3.13')";
      }
      return std::nullopt;
    }
    std::optional<Specifier> spec = parse_specifier(clause, error);
    if (!spec) return std::nullopt;
    set.push_back(std::move(*spec));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return set;
}

bool contains(const Specifier& spec, const std::optional<Version>& candidate,
              std::string_view raw_candidate) {
  if (spec.op == Operator::arbitrary) {
    const std::string written = candidate ? candidate->str() : lowercase(trim(raw_candidate));
    return written == lowercase(spec.version_text);
  }
  if (!candidate) return false;
  const Version& v = *candidate;
  switch (spec.op) {
    case Operator::equal: return equal_match(spec, v);
    case Operator::not_equal: return !equal_match(spec, v);
    case Operator::compatible: {
      // ~=X.Y.Z means >=X.Y.Z and ==X.Y.*
      std::vector<std::string> prefix = spec.version.release;
      prefix.pop_back();
      return v.public_version() >= spec.version &&
             release_starts_with(v, spec.version.epoch, prefix);
    }
    case Operator::less_equal: return v.public_version() <= spec.version;
    case Operator::greater_equal: return v.public_version() >= spec.version;
    case Operator::less:
      // <V excludes pre-releases of V itself unless V is a pre-release.
      if (!(v < spec.version)) return false;
      return spec.version.is_prerelease() || !v.is_prerelease() || !same_base(v, spec.version);
    case Operator::greater:
      // >V excludes post-releases and local builds of V itself unless V is a post-release.
      if (!(v > spec.version)) return false;
      if (!spec.version.is_postrelease() && v.is_postrelease() && same_base(v, spec.version)) {
        return false;
      }
      return v.local.empty() || !same_base(v, spec.version);
    case Operator::arbitrary: break;
  }
  return false;
}

bool contains(const std::vector<Specifier>& set, std::string_view candidate) {
  const std::optional<Version> version = parse_version(candidate);
  if (set.empty()) return version.has_value();
  return std::all_of(set.begin(), set.end(),
                     [&](const Specifier& spec) { return contains(spec, version, candidate); });
}

}  // namespace engine::pep440

namespace engine {

bool is_valid_specifier_set(std::string_view spec, std::string* error) {
  return pep440::parse_specifier_set(spec, error).has_value();
}

bool specifier_set_contains(std::string_view spec, std::string_view version) {
  const std::optional<std::vector<pep440::Specifier>> set =
      pep440::parse_specifier_set(spec, nullptr);
  return set && pep440::contains(*set, version);
}

}  // namespace engine
