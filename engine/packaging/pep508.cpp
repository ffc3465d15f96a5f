// PEP 508 dependency specifiers, following the specification's grammar:
//   specification = wsp* ( url_req | name_req ) wsp*
//   name_req = name wsp* extras? wsp* versionspec? wsp* quoted_marker?
//   url_req  = name wsp* extras? wsp* '@' wsp* URI (wsp+ | end) quoted_marker?
#include "engine/packaging/pep508.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "engine/packaging/markers.h"
#include "engine/packaging/pep440.h"

namespace engine {
namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_wsp(char c) { return c == ' ' || c == '\t'; }
bool is_version_char(char c) {
  return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '*' || c == '+' || c == '!';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class RequirementFailure {
 public:
  RequirementFailure(std::string message, std::size_t position)
      : message_(std::move(message)), position_(position) {}
  const std::string& message() const { return message_; }
  std::size_t position() const { return position_; }

 private:
  std::string message_;
  std::size_t position_;
};

class RequirementParser {
 public:
  explicit RequirementParser(std::string_view s) : s_(s) {}

  Requirement parse() {
    Requirement req;
    skip_wsp();
    req.name = identifier("a package name");
    skip_wsp();
    if (peek() == '[') req.extras = extras();
    skip_wsp();
    if (peek() == '@') {
      ++pos_;
      req.url = url();
      skip_wsp();
      if (peek() == ';') {
        req.marker = marker();
      } else if (pos_ < s_.size() && req.url.back() == ';') {
        // "pkg @ https://host/pkg.whl; python_version < '3.12'": the ';' was read as URL text.
        fail("a marker after a URL needs whitespace before ';' (PEP 508)");
      }
    } else {
      req.specifier = version_spec();
      skip_wsp();
      if (peek() == ';') req.marker = marker();
    }
    skip_wsp();
    if (pos_ != s_.size()) unexpected();
    return req;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_wsp() {
    while (is_wsp(peek())) ++pos_;
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw RequirementFailure(message, pos_);
  }

  [[noreturn]] void unexpected() const {
    const std::string rest(s_.substr(pos_, 24));
    if (is_alnum(peek())) {
      fail("unexpected '" + rest + "' (one requirement per string; a version needs an operator "
           "such as '==' or '>=')");
    }
    if (peek() == '=') fail("'=' is not an operator; use '=='");
    fail("unexpected '" + rest + "'");
  }

  // letterOrDigit ( ('-' | '_' | '.')* letterOrDigit )*
  std::string identifier(const char* what) {
    const std::size_t start = pos_;
    if (!is_alnum(peek())) {
      if (pos_ >= s_.size()) fail(std::string("expected ") + what + ", found the end");
      fail(std::string("expected ") + what + " (letters, digits, '-', '_', '.'), found '" +
           std::string(1, peek()) + "'");
    }
    while (is_alnum(peek()) || peek() == '-' || peek() == '_' || peek() == '.') ++pos_;
    std::string_view name = s_.substr(start, pos_ - start);
    if (!is_alnum(name.back())) {
      --pos_;
      fail("'" + std::string(name) + "' must end with a letter or digit");
    }
    return std::string(name);
  }

  std::vector<std::string> extras() {
    ++pos_;  // '['
    std::vector<std::string> names;
    skip_wsp();
    if (peek() != ']') {
      while (true) {
        names.push_back(identifier("an extra name"));
        skip_wsp();
        if (peek() != ',') break;
        ++pos_;
        skip_wsp();
      }
    }
    if (peek() != ']') fail("expected ',' or ']' in the extras list");
    ++pos_;
    return names;
  }

  // versionspec = ('(' version_many ')') | version_many; every clause checked against PEP 440.
  std::string version_spec() {
    const bool parenthesised = peek() == '(';
    if (parenthesised) {
      ++pos_;
      skip_wsp();
    }
    std::string joined;
    const char c = peek();
    if (c == '<' || c == '>' || c == '=' || c == '!' || c == '~') {
      while (true) {
        skip_wsp();
        const std::size_t clause_start = pos_;
        const std::string op = version_operator();
        skip_wsp();
        const std::size_t version_start = pos_;
        while (is_version_char(peek())) ++pos_;
        if (pos_ == version_start) fail("expected a version after '" + op + "'");
        const std::string clause = op + std::string(s_.substr(version_start, pos_ - version_start));
        std::string error;
        if (!pep440::parse_specifier(clause, &error)) {
          pos_ = clause_start;
          fail(error);
        }
        if (!joined.empty()) joined += ',';
        joined += clause;
        skip_wsp();
        if (peek() != ',') break;
        ++pos_;
      }
    } else if (parenthesised) {
      fail("expected a version specifier such as '>=1.0' after '('");
    }
    if (parenthesised) {
      skip_wsp();
      if (peek() != ')') fail("expected ')' to close the version specifier");
      ++pos_;
    }
    return joined;
  }

  std::string version_operator() {
    static constexpr std::array<std::string_view, 8> kOperators{"===", "==", "!=", "<=", ">=",
                                                                "~=",  "<",  ">"};
    for (std::string_view op : kOperators) {
      if (s_.substr(pos_, op.size()) == op) {
        pos_ += op.size();
        return std::string(op);
      }
    }
    if (peek() == '=') fail("'=' is not an operator; use '=='");
    fail("expected a version operator (~=, ==, !=, <=, >=, <, >, ===)");
  }

  // The URL runs to the next whitespace; as installers do, it must be absolute with a scheme,
  // and a host unless it is a file: URL.
  std::string url() {
    skip_wsp();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && !is_wsp(s_[pos_])) ++pos_;
    const std::string_view u = s_.substr(start, pos_ - start);
    if (u.empty()) fail("expected a URL after '@'");
    const std::size_t colon = u.find(':');
    const auto bad = [&](const std::string& why) {
      pos_ = start;
      fail("'" + std::string(u) + "' is not a usable URL: " + why);
    };
    const bool scheme_ok =
        colon != std::string_view::npos && colon > 0 &&
        std::all_of(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(colon), [](char ch) {
          return is_alnum(ch) || ch == '+' || ch == '-' || ch == '.';
        }) &&
        !(u[0] >= '0' && u[0] <= '9');
    if (!scheme_ok) bad("it needs a scheme, e.g. https://host/pkg.whl or file:///abs/path");
    std::string scheme(u.substr(0, colon));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](char ch) {
      return (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
    });
    const std::string_view rest = u.substr(colon + 1);
    if (rest.substr(0, 2) != "//") {
      bad(scheme == "file" ? "write local paths as file:///absolute/path"
                           : "expected '//' and a host after '" + scheme + ":'");
    }
    if (scheme != "file") {
      const std::string_view authority = rest.substr(2, rest.find_first_of("/?#", 2) - 2);
      if (authority.empty()) bad("it has no host");
    }
    if (std::any_of(u.begin(), u.end(), [](char ch) {
          return static_cast<unsigned char>(ch) < 0x20 || ch == '\x7f';
        })) {
      bad("it contains control characters");
    }
    return std::string(u);
  }

  std::string marker() {
    ++pos_;  // ';'
    skip_wsp();
    const std::size_t start = pos_;
    std::string_view text = s_.substr(start);
    while (!text.empty() && is_wsp(text.back())) text.remove_suffix(1);
    if (text.empty()) fail("expected a marker after ';'");
    if (std::optional<markers::SyntaxError> error = markers::check_syntax(text)) {
      pos_ = start + error->position;
      fail("invalid marker: " + error->message);
    }
    pos_ = start + text.size();
    return std::string(text);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool in_separator_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_separator_run) out += '-';
      in_separator_run = true;
      continue;
    }
    in_separator_run = false;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

std::optional<Requirement> parse_requirement(std::string_view text, std::string* error) {
  // Leading/trailing whitespace of any kind is not part of the requirement; columns still count
  // from the start of the text as given.
  std::size_t offset = 0;
  while (offset < text.size() && is_space(text[offset])) ++offset;
  std::string_view trimmed = text.substr(offset);
  while (!trimmed.empty() && is_space(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.empty()) {
    if (error) *error = "empty requirement string (PEP 508 needs at least a package name)";
    return std::nullopt;
  }
  try {
    Requirement req = RequirementParser(trimmed).parse();
    req.raw = std::string(trimmed);
    req.normalized_name = normalize_name(req.name);
    return req;
  } catch (const RequirementFailure& failure) {
    if (error) {
      *error = "'" + std::string(trimmed) + "' is not a valid PEP 508 requirement: " +
               failure.message() + " (column " + std::to_string(offset + failure.position() + 1) +
               ")";
    }
    return std::nullopt;
  }
}

std::vector<Requirement> merge_requirements(const std::vector<Requirement>& block,
                                            const std::vector<Requirement>& parameter) {
  std::vector<Requirement> merged;
  std::unordered_map<std::string, std::size_t> position;
  for (const auto* list : {&block, &parameter}) {
    for (const Requirement& req : *list) {
      const auto [it, inserted] = position.try_emplace(req.normalized_name, merged.size());
      if (inserted) {
        merged.push_back(req);
      } else {
        merged[it->second] = req;
      }
    }
  }
  return merged;
}

}  // namespace engine
