// PEP 508 dependency specifiers: parsing, name normalisation (PEP 503) and the merge of two
// requirement lists by name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine {

// PEP 508 requirement, parsed enough to validate, normalise and evaluate markers.
struct Requirement {
  std::string raw;              // as written (trimmed)
  std::string name;             // as written
  std::string normalized_name;  // PEP 503: lowercase, runs of -_. become -
  std::vector<std::string> extras;
  std::string specifier;        // PEP 440 specifier set, "" if none
  std::string url;              // for `name @ url`
  std::string marker;           // "" if none
};

// Parses one PEP 508 string; nullopt + `error` set when invalid (the message quotes the string,
// says what is wrong and at which column, and names PEP 508/PEP 440).
std::optional<Requirement> parse_requirement(std::string_view text, std::string* error);
std::string normalize_name(std::string_view name);

// Block dependencies merged with the `dependencies` parameter by normalised name; the later
// spec wins (parameter after block). Order: first appearance.
std::vector<Requirement> merge_requirements(const std::vector<Requirement>& block,
                                            const std::vector<Requirement>& parameter);

}  // namespace engine
