#include "engine/packaging/markers.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "engine/packaging/pep440.h"

namespace engine {
namespace {

constexpr std::array<std::string_view, 12> kVariables{
    "python_version",   "python_full_version", "os_name",
    "sys_platform",     "platform_release",    "platform_system",
    "platform_version", "platform_machine",    "platform_python_implementation",
    "implementation_name", "implementation_version", "extra"};

// Spellings from before PEP 508 that current installers reject.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kLegacyVariables{{
    {"os.name", "os_name"},
    {"sys.platform", "sys_platform"},
    {"platform.version", "platform_version"},
    {"platform.machine", "platform_machine"},
    {"platform.python_implementation", "platform_python_implementation"},
    {"python_implementation", "platform_python_implementation"}}};

struct Operand {
  bool variable = false;
  std::string text;  // variable name or string contents
};

struct Node {
  enum class Kind { all_of, any_of, compare } kind = Kind::compare;
  std::vector<Node> children;  // all_of / any_of
  Operand lhs, rhs;            // compare
  std::string op;              // compare: ==, <, in, not in, ...
};

class ParseFailure {
 public:
  ParseFailure(std::string message, std::size_t position)
      : error_{std::move(message), position} {}
  const markers::SyntaxError& error() const { return error_; }

 private:
  markers::SyntaxError error_;
};

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

// Recursive descent over the PEP 508 marker grammar: or binds looser than and; parentheses group.
class Parser {
 public:
  static constexpr int kMaxMarkerNesting = 64;

  explicit Parser(std::string_view s) : s_(s) {}

  Node parse() {
    Node node = parse_or();
    skip_space();
    if (pos_ != s_.size()) {
      if (s_[pos_] == ')') fail("unbalanced ')'");
      fail("unexpected '" + std::string(s_.substr(pos_, 20)) +
           "' (markers are joined with 'and' / 'or')");
    }
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw ParseFailure(message, pos_); }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }

  // A keyword must not run into an identifier ("andos_name" is not "and os_name").
  bool take_keyword(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    const std::size_t end = pos_ + word.size();
    if (end < s_.size() && is_identifier_char(s_[end])) return false;
    pos_ = end;
    return true;
  }

  Node parse_or() {
    Node first = parse_and();
    std::vector<Node> parts;
    while (true) {
      skip_space();
      if (!take_keyword("or")) break;
      if (parts.empty()) parts.push_back(std::move(first));
      parts.push_back(parse_and());
    }
    if (parts.empty()) return first;
    Node node;
    node.kind = Node::Kind::any_of;
    node.children = std::move(parts);
    return node;
  }

  Node parse_and() {
    Node first = parse_expression();
    std::vector<Node> parts;
    while (true) {
      skip_space();
      if (!take_keyword("and")) break;
      if (parts.empty()) parts.push_back(std::move(first));
      parts.push_back(parse_expression());
    }
    if (parts.empty()) return first;
    Node node;
    node.kind = Node::Kind::all_of;
    node.children = std::move(parts);
    return node;
  }

  Node parse_expression() {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      // Each level recurses (here, in evaluation and in the tree's destruction): bounded, so
      // that no marker a client sends can exhaust the stack.
      if (++depth_ > kMaxMarkerNesting) {
        fail("parentheses nested deeper than " + std::to_string(kMaxMarkerNesting) + " levels");
      }
      ++pos_;
      Node inner = parse_or();
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ')') fail("expected ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    Node node;
    node.lhs = parse_operand();
    node.op = parse_operator();
    node.rhs = parse_operand();
    return node;
  }

  Operand parse_operand() {
    skip_space();
    if (pos_ >= s_.size()) fail("expected a marker variable or a quoted string, found the end");
    const char quote = s_[pos_];
    if (quote == '"' || quote == '\'') {
      const std::size_t close = s_.find(quote, pos_ + 1);
      if (close == std::string_view::npos) fail("unterminated string");
      Operand operand{false, std::string(s_.substr(pos_ + 1, close - pos_ - 1))};
      pos_ = close + 1;
      return operand;
    }
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_identifier_char(s_[pos_])) ++pos_;
    const std::string_view name = s_.substr(start, pos_ - start);
    if (std::find(kVariables.begin(), kVariables.end(), name) != kVariables.end()) {
      return Operand{true, std::string(name)};
    }
    pos_ = start;
    for (const auto& [legacy, current] : kLegacyVariables) {
      if (name == legacy) {
        fail("'" + std::string(legacy) + "' is a pre-PEP 508 spelling; use '" +
             std::string(current) + "'");
      }
    }
    if (name.empty()) {
      fail("expected a marker variable or a quoted string, found '" +
           std::string(s_.substr(pos_, 1)) + "'");
    }
    fail("unknown marker variable '" + std::string(name) +
         "' (PEP 508 defines python_version, python_full_version, os_name, sys_platform, "
         "platform_release, platform_system, platform_version, platform_machine, "
         "platform_python_implementation, implementation_name, implementation_version, extra); "
         "string values must be quoted");
  }

  std::string parse_operator() {
    skip_space();
    static constexpr std::array<std::string_view, 8> kComparisons{"===", "==", "!=", "<=", ">=",
                                                                 "~=",  "<",  ">"};
    for (std::string_view op : kComparisons) {
      if (s_.substr(pos_, op.size()) == op) {
        pos_ += op.size();
        return std::string(op);
      }
    }
    if (take_keyword("in")) return "in";
    const std::size_t start = pos_;
    if (take_keyword("not")) {
      const std::size_t after_not = pos_;
      skip_space();
      if (pos_ > after_not && take_keyword("in")) return "not in";
      pos_ = start;
      fail("expected 'not in'");
    }
    if (pos_ < s_.size() && s_[pos_] == '=') fail("'=' is not an operator; use '=='");
    fail("expected a comparison (==, !=, <, <=, >, >=, ~=, ===, in, not in)");
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // open parentheses
};

std::string lookup(const Operand& operand, const MarkerEnvironment& env) {
  if (!operand.variable) return operand.text;
  const std::string& name = operand.text;
  if (name == "python_version") return env.python_version;
  if (name == "python_full_version") return env.python_full_version;
  if (name == "os_name") return env.os_name;
  if (name == "sys_platform") return env.sys_platform;
  if (name == "platform_release") return env.platform_release;
  if (name == "platform_system") return env.platform_system;
  if (name == "platform_version") return env.platform_version;
  if (name == "platform_machine") return env.platform_machine;
  if (name == "platform_python_implementation") return env.platform_python_implementation;
  if (name == "implementation_name") return env.implementation_name;
  if (name == "implementation_version") {
    return env.implementation_version.empty() ? env.python_full_version : env.implementation_version;
  }
  return "";  // extra: a top-level requirement is never evaluated for an extra
}

// As installers do: a comparison whose right side reads as a PEP 440 specifier compares versions;
// otherwise ordinary string comparison.
bool compare(const std::string& lhs, const std::string& op, const std::string& rhs) {
  if (op == "in") return rhs.find(lhs) != std::string::npos;
  if (op == "not in") return rhs.find(lhs) == std::string::npos;
  // A value that is not a version (platform_release "6.1.0-18-amd64") is compared as a string
  // rather than making the marker an error.
  if (std::optional<pep440::Specifier> spec = pep440::parse_specifier(op + rhs, nullptr)) {
    const std::optional<pep440::Version> version = pep440::parse_version(lhs);
    if (version || spec->op == pep440::Operator::arbitrary) {
      return pep440::contains(*spec, version, lhs);
    }
  }
  if (op == "==") return lhs == rhs;
  if (op == "!=") return lhs != rhs;
  if (op == "<") return lhs < rhs;
  if (op == "<=") return lhs <= rhs;
  if (op == ">") return lhs > rhs;
  if (op == ">=") return lhs >= rhs;
  return false;  // ~= / === on something that is not a version: undefined, never true
}

bool evaluate(const Node& node, const MarkerEnvironment& env) {
  switch (node.kind) {
    case Node::Kind::all_of:
      return std::all_of(node.children.begin(), node.children.end(),
                         [&](const Node& child) { return evaluate(child, env); });
    case Node::Kind::any_of:
      return std::any_of(node.children.begin(), node.children.end(),
                         [&](const Node& child) { return evaluate(child, env); });
    case Node::Kind::compare:
      return compare(lookup(node.lhs, env), node.op, lookup(node.rhs, env));
  }
  return false;
}

}  // namespace

namespace markers {

std::optional<SyntaxError> check_syntax(std::string_view marker) {
  try {
    Parser(marker).parse();
    return std::nullopt;
  } catch (const ParseFailure& failure) {
    return failure.error();
  }
}

}  // namespace markers

bool evaluate_marker(std::string_view marker, const MarkerEnvironment& env) {
  try {
    return evaluate(Parser(marker).parse(), env);
  } catch (const ParseFailure&) {
    return false;
  }
}

std::optional<std::string> marker_syntax_error(std::string_view marker) {
  std::optional<markers::SyntaxError> error = markers::check_syntax(marker);
  if (!error) return std::nullopt;
  return "invalid PEP 508 marker '" + std::string(marker) + "': " + error->message + " (column " +
         std::to_string(error->position + 1) + ")";
}

}  // namespace engine
