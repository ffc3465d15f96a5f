// PEP 723 inline script metadata, PEP 508 requirements and PEP 440 specifiers: parsing,
// validation and the merge of the `dependencies` parameter with the script's block.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine {

struct MetadataError {
  std::string message;  // names the offending spec or "line L, column C"
  int line = 0;         // 1-based line in the script; 0 = not tied to a line
  int column = 0;       // 1-based column in the script; 0 = whole line / unknown
};

// The `# /// script` block of a script, as the PEP 723 specification extracts it.
struct ScriptMetadata {
  bool has_block = false;
  std::optional<std::string> requires_python;  // raw specifier text
  std::vector<std::string> dependencies;        // raw PEP 508 strings, in block order
  std::vector<MetadataError> errors;            // non-empty = INVALID
  std::vector<std::string> warnings;            // e.g. unknown keys
  int first_line = 0;                            // lines of `# /// script` and `# ///` (1-based)
  int last_line = 0;
  std::vector<int> dependency_lines;             // script line of each entry of `dependencies`
};

// Extracts and parses the block (TOML via toml++; CRLF tolerated; a second `script` block is an
// error; an empty block is valid). Does not validate the individual specs.
// Lines end at \n, \r\n or a lone \r, as Python's own line numbering counts them. A block is
// opened by `# /// script` and closed by the last `# ///` of the run of comment lines that
// follows (the specification's precedence rule); `# /// script` directly followed by `# ///` is
// an empty block. TOML errors carry the line and column in the script's numbering.
ScriptMetadata parse_script_metadata(std::string_view script);

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

// PEP 440 specifier set validation ("", ">=3.9", ">=3.9,<3.13", "==3.11.*", "~=3.10").
bool is_valid_specifier_set(std::string_view spec, std::string* error);
// Whether `version` ("3.11.2") satisfies the specifier set (PEP 440 ordering, wildcards, ~=).
// Pre-releases are allowed; false when `spec` or `version` is invalid.
bool specifier_set_contains(std::string_view spec, std::string_view version);

// Environment for marker evaluation (python_version, sys_platform, ...); default: from the
// interpreter that would run the script.
struct MarkerEnvironment {
  std::string python_version;        // "3.11"
  std::string python_full_version;   // "3.11.2"
  std::string implementation_name = "cpython";
  std::string sys_platform = "linux";
  std::string platform_system = "Linux";
  std::string platform_machine = "x86_64";
  std::string os_name = "posix";
  std::string platform_python_implementation = "CPython";
  std::string platform_release;        // platform.release(), e.g. "6.1.0-18-amd64"
  std::string platform_version;        // platform.version()
  std::string implementation_version;  // "" = python_full_version
};
// PEP 508 marker evaluation (`extra` is ""). False when the marker is not valid PEP 508.
bool evaluate_marker(std::string_view marker, const MarkerEnvironment& env);
// nullopt when `marker` is valid PEP 508 marker syntax, else the reason.
std::optional<std::string> marker_syntax_error(std::string_view marker);

// Block dependencies merged with the `dependencies` parameter by normalised name; the later
// spec wins (parameter after block). Order: first appearance.
std::vector<Requirement> merge_requirements(const std::vector<Requirement>& block,
                                            const std::vector<Requirement>& parameter);

// Everything validate_script reports, computed against the interpreter that would run it.
struct ScriptValidation {
  bool valid = true;
  std::optional<std::string> requires_python;  // the block's, or nullopt
  std::vector<Requirement> dependencies;        // merged
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};
// `interpreter.python_full_version` is what requires-python is checked against (its release
// part, as pip does); when it is empty only the syntax of requires-python is checked.
// Dependencies whose markers do not apply to the interpreter stay in the list (the installer
// skips them); they are not errors.
ScriptValidation validate_script(std::string_view script,
                                 const std::vector<std::string>& dependency_parameter,
                                 const MarkerEnvironment& interpreter);

}  // namespace engine
