// PEP 723 inline script metadata, the merge of the `dependencies` parameter with the block, and
// validate_script().
#include "engine/packaging/script_metadata.h"

#include <algorithm>
#include <unordered_map>

#include <toml++/toml.h>

#include "engine/packaging/pep440.h"

namespace engine {
namespace {

constexpr std::string_view kCloser = "# ///";

// Splits at \n, \r\n and lone \r: the line numbers Python reports in tracebacks.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    lines.push_back(text.substr(start, i - start));
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  lines.push_back(text.substr(start));
  return lines;
}

// `# /// TYPE` with TYPE of ASCII letters, digits and hyphens.
std::optional<std::string_view> opening_type(std::string_view line) {
  constexpr std::string_view kPrefix = "# /// ";
  if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view type = line.substr(kPrefix.size());
  const bool valid = !type.empty() && std::all_of(type.begin(), type.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
  return valid ? std::optional<std::string_view>(type) : std::nullopt;
}

// Embedded content lines: "#" alone, or "#" followed by a space.
bool is_content_line(std::string_view line) {
  return line == "#" || line.substr(0, 2) == "# ";
}

struct Block {
  std::string_view type;
  std::size_t open = 0;   // index of `# /// TYPE`
  std::size_t close = 0;  // index of `# ///`
};

// Every closed block, in order. A block's end is the last `# ///` in the run of content lines
// after its opening line (an ending line wins only when the next line is not content), which is
// what the reference regex's greedy match does. Unclosed blocks are ignored.
std::vector<Block> find_blocks(const std::vector<std::string_view>& lines) {
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::optional<std::string_view> type = opening_type(lines[i]);
    if (!type) continue;
    std::size_t run_end = i + 1;
    while (run_end < lines.size() && is_content_line(lines[run_end])) ++run_end;
    std::size_t close = 0;
    for (std::size_t j = run_end; j > i + 1; --j) {
      if (lines[j - 1] == kCloser) {
        close = j - 1;
        break;
      }
    }
    if (close == 0) continue;
    blocks.push_back(Block{*type, i, close});
    i = close;
  }
  return blocks;
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// Maps positions in the embedded TOML back to the script.
class PositionMap {
 public:
  PositionMap(const std::vector<std::string_view>& lines, const Block& block) : block_(block) {
    for (std::size_t i = block.open + 1; i < block.close; ++i) {
      prefix_.push_back(lines[i].size() >= 2 ? 2 : 1);
    }
  }
  // toml++ positions are 1-based; 0 means unknown.
  int line(toml::source_index toml_line) const {
    if (toml_line == 0) return static_cast<int>(block_.open) + 1;
    const std::size_t clamped = std::min<std::size_t>(toml_line, prefix_.size() + 1);
    return static_cast<int>(block_.open + 1 + clamped);
  }
  int column(toml::source_index toml_line, toml::source_index toml_column) const {
    if (toml_line == 0 || toml_line > prefix_.size()) return toml_column == 0 ? 0 : 1;
    return static_cast<int>(toml_column + prefix_[toml_line - 1]);
  }

 private:
  Block block_;
  std::vector<std::size_t> prefix_;  // characters stripped from each content line
};

std::string at(int line, int column = 0) {
  std::string s = "line " + std::to_string(line);
  if (column > 0) s += ", column " + std::to_string(column);
  return s;
}

void read_table(const toml::table& table, const PositionMap& map, ScriptMetadata& out) {
  auto error = [&](const toml::node& node, const std::string& message) {
    const int line = map.line(node.source().begin.line);
    out.errors.push_back(MetadataError{at(line) + ": " + message, line, 0});
  };
  for (const auto& [key, node] : table) {
    const std::string_view name = key.str();
    if (name == "requires-python") {
      if (const auto* value = node.as_string()) {
        out.requires_python = value->get();
      } else {
        error(node, "`requires-python` must be a string such as \">=3.10\" (PEP 723), found " +
                        std::string(type_name(node)));
      }
    } else if (name == "dependencies") {
      const auto* array = node.as_array();
      if (!array) {
        error(node, "`dependencies` must be an array of strings such as [\"requests<3\"] "
                    "(PEP 723), found " + std::string(type_name(node)));
        continue;
      }
      for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::node& item = *array->get(i);
        if (const auto* value = item.as_string()) {
          out.dependencies.push_back(value->get());
          out.dependency_lines.push_back(map.line(item.source().begin.line));
        } else {
          error(item, "`dependencies` must be an array of strings (PEP 723), but item " +
                          std::to_string(i + 1) + " is " + std::string(type_name(item)));
        }
      }
    } else if (name == "tool") {
      if (!node.is_table()) {
        error(node, "`tool` must be a table (PEP 723), found " + std::string(type_name(node)));
      }
    } else {
      out.warnings.push_back(at(map.line(node.source().begin.line)) + ": unknown key `" +
                             std::string(name) +
                             "` in the `# /// script` block is ignored (PEP 723 defines "
                             "`requires-python`, `dependencies` and `[tool]`)");
    }
  }
}

}  // namespace

ScriptMetadata parse_script_metadata(std::string_view script) {
  ScriptMetadata out;
  const std::vector<std::string_view> lines = split_lines(script);
  std::vector<Block> blocks = find_blocks(lines);
  std::erase_if(blocks, [](const Block& b) { return b.type != "script"; });
  if (blocks.empty()) return out;

  const Block& block = blocks.front();
  out.has_block = true;
  out.first_line = static_cast<int>(block.open) + 1;
  out.last_line = static_cast<int>(block.close) + 1;
  if (blocks.size() > 1) {
    std::string where;
    for (const Block& b : blocks) where += (where.empty() ? "" : ", ") + std::to_string(b.open + 1);
    const int second = static_cast<int>(blocks[1].open) + 1;
    out.errors.push_back(MetadataError{
        at(second) + ": a second `# /// script` block (blocks start at lines " + where +
            "); PEP 723 allows only one, so merge them",
        second, 1});
    return out;
  }

  std::string content;
  for (std::size_t i = block.open + 1; i < block.close; ++i) {
    const std::string_view line = lines[i];
    content += line.substr(line.size() >= 2 ? 2 : 1);
    content += '\n';
  }
  const PositionMap map(lines, block);
  try {
    const toml::table table = toml::parse(content);
    read_table(table, map, out);
  } catch (const toml::parse_error& e) {
    const toml::source_position begin = e.source().begin;
    const int line = map.line(begin.line);
    const int column = map.column(begin.line, begin.column);
    out.errors.push_back(MetadataError{
        at(line, column) + ": invalid TOML in the `# /// script` block: " +
            std::string(e.description()),
        line, column});
  }
  return out;
}

ScriptValidation validate_script(std::string_view script,
                                 const std::vector<std::string>& dependency_parameter,
                                 const MarkerEnvironment& interpreter) {
  ScriptValidation result;
  ScriptMetadata metadata = parse_script_metadata(script);
  for (MetadataError& e : metadata.errors) result.errors.push_back(std::move(e.message));
  result.warnings = std::move(metadata.warnings);
  result.requires_python = metadata.requires_python;

  // Bounds on what a caller may ask to install: a client's oversized input is refused as such,
  // never passed on until an installer's command line fails.
  const std::size_t asked = metadata.dependencies.size() + dependency_parameter.size();
  if (asked > kMaxRequirements) {
    result.errors.push_back(std::to_string(asked) + " dependencies asked for; at most " +
                            std::to_string(kMaxRequirements) + " are accepted per script");
    result.valid = false;
    return result;
  }
  bool oversized = false;
  const auto too_long = [&oversized](const std::string& text) {
    oversized = oversized || text.size() > kMaxRequirementLength;
    return text.size() > kMaxRequirementLength;
  };
  for (std::size_t i = 0; i < metadata.dependencies.size(); ++i) {
    if (too_long(metadata.dependencies[i])) {
      result.errors.push_back(at(metadata.dependency_lines[i]) + ": a dependency of " +
                              std::to_string(metadata.dependencies[i].size()) + " characters; at most " +
                              std::to_string(kMaxRequirementLength) + " are accepted");
    }
  }
  for (const std::string& text : dependency_parameter) {
    if (too_long(text)) {
      result.errors.push_back("dependencies parameter: a dependency of " + std::to_string(text.size()) +
                              " characters; at most " + std::to_string(kMaxRequirementLength) + " are accepted");
    }
  }
  if (oversized) {
    result.valid = false;
    return result;
  }

  std::vector<Requirement> block;
  for (std::size_t i = 0; i < metadata.dependencies.size(); ++i) {
    std::string error;
    if (auto req = parse_requirement(metadata.dependencies[i], &error)) {
      block.push_back(std::move(*req));
    } else {
      result.errors.push_back(at(metadata.dependency_lines[i]) + ": " + error);
    }
  }
  std::vector<Requirement> parameter;
  for (const std::string& text : dependency_parameter) {
    std::string error;
    if (auto req = parse_requirement(text, &error)) {
      parameter.push_back(std::move(*req));
    } else {
      result.errors.push_back("dependencies parameter: " + error);
    }
  }

  if (metadata.requires_python) {
    const std::string& spec = *metadata.requires_python;
    std::string error;
    if (!is_valid_specifier_set(spec, &error)) {
      result.errors.push_back("requires-python: " + error);
    } else if (!interpreter.python_full_version.empty()) {
      // As pip does: the interpreter's release (3.13.0 for 3.13.0rc1) is what is checked.
      const std::optional<pep440::Version> version =
          pep440::parse_version(interpreter.python_full_version);
      const std::string release =
          version ? version->base_version().str() : interpreter.python_full_version;
      if (!specifier_set_contains(spec, release)) {
        result.errors.push_back("requires-python '" + spec + "' is not satisfied by the "
                                "interpreter that would run the script (Python " +
                                interpreter.python_full_version + ")");
      }
    }
  }

  result.dependencies = merge_requirements(block, parameter);
  result.valid = result.errors.empty();
  return result;
}

}  // namespace engine
