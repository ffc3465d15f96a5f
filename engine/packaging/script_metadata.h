// PEP 723 inline script metadata: the `# /// script` block of a script, and validate_script(),
// which checks it (with the `dependencies` parameter merged in) against the interpreter that
// would run it. Requirements are PEP 508 (pep508.h), specifiers PEP 440 (pep440.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/packaging/markers.h"
#include "engine/packaging/pep508.h"

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

// What one script may ask to install, PEP 723 block and `dependencies` parameter together.
inline constexpr std::size_t kMaxRequirements = 256;
inline constexpr std::size_t kMaxRequirementLength = 2048;

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
