// PEP 723 extraction, the merge rules and validate_script().
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/packaging/script_metadata.h"

using engine::parse_script_metadata;

namespace {

// The example of the PEP 723 specification.
const std::string kSpecExample =
    "# /// script\n"
    "# requires-python = \">=3.11\"\n"
    "# dependencies = [\n"
    "#   \"requests<3\",\n"
    "#   \"rich\",\n"
    "# ]\n"
    "# ///\n"
    "\n"
    "import requests\n"
    "from rich.pretty import pprint\n";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::vector<std::string> names(const std::vector<engine::Requirement>& reqs) {
  std::vector<std::string> out;
  for (const auto& r : reqs) out.push_back(r.raw);
  return out;
}

std::vector<engine::Requirement> parse_all(const std::vector<std::string>& texts) {
  std::vector<engine::Requirement> out;
  for (const auto& t : texts) {
    std::string error;
    auto r = engine::parse_requirement(t, &error);
    INFO(error);
    REQUIRE(r.has_value());
    out.push_back(*r);
  }
  return out;
}

engine::MarkerEnvironment python(const std::string& full) {
  engine::MarkerEnvironment env;
  env.python_full_version = full;
  env.python_version = full.substr(0, full.find('.', full.find('.') + 1));
  return env;
}

}  // namespace

TEST_CASE("PEP 723: the specification's example", "[pep723]") {
  const auto m = parse_script_metadata(kSpecExample);
  CHECK(m.has_block);
  CHECK(m.errors.empty());
  CHECK(m.warnings.empty());
  REQUIRE(m.requires_python.has_value());
  CHECK(*m.requires_python == ">=3.11");
  CHECK(m.dependencies == std::vector<std::string>{"requests<3", "rich"});
  CHECK(m.dependency_lines == std::vector<int>{4, 5});
  CHECK(m.first_line == 1);
  CHECK(m.last_line == 7);
}

TEST_CASE("PEP 723: CRLF and lone CR line endings", "[pep723]") {
  for (const std::string eol : {"\r\n", "\r"}) {
    const auto m = parse_script_metadata(replace_all(kSpecExample, "\n", eol));
    CHECK(m.has_block);
    CHECK(m.errors.empty());
    CHECK(m.dependencies == std::vector<std::string>{"requests<3", "rich"});
    CHECK(m.dependency_lines == std::vector<int>{4, 5});
    CHECK(m.last_line == 7);
  }
}

TEST_CASE("PEP 723: where blocks start and end", "[pep723]") {
  SECTION("no block") {
    const auto m = parse_script_metadata("print('hi')\n# dependencies = ['x']\n");
    CHECK_FALSE(m.has_block);
    CHECK(m.errors.empty());
    CHECK(m.dependencies.empty());
  }
  SECTION("a block after a shebang and code") {
    const auto m = parse_script_metadata(
        "#!/usr/bin/env python3\n\"\"\"Doc.\"\"\"\nx = 1\n# /// script\n# dependencies = [\"a\"]\n# ///\n");
    CHECK(m.has_block);
    CHECK(m.first_line == 4);
    CHECK(m.dependency_lines == std::vector<int>{5});
  }
  SECTION("the closing line is the last `# ///` of the run of comment lines") {
    // The specification's precedence rule: `# ///` inside a TOML multi-line string does not end it.
    const auto m = parse_script_metadata(
        "# /// script\n"
        "# dependencies = [\"rich\"]\n"
        "# [tool.example]\n"
        "# text = \"\"\"\n"
        "# /// <summary>\n"
        "# ///\n"
        "# \"\"\"\n"
        "# ///\n"
        "print(1)\n");
    CHECK(m.errors.empty());
    CHECK(m.dependencies == std::vector<std::string>{"rich"});
    CHECK(m.last_line == 8);
  }
  SECTION("a comment after the closing line without another `# ///` keeps the first close") {
    const auto m = parse_script_metadata(
        "# /// script\n# dependencies = [\"a\"]\n# ///\n# just a comment\nx = 1\n");
    CHECK(m.errors.empty());
    CHECK(m.last_line == 3);
    CHECK(m.dependencies == std::vector<std::string>{"a"});
  }
  SECTION("closing line at the end of the text without a newline") {
    const auto m = parse_script_metadata("# /// script\n# dependencies = [\"a\"]\n# ///");
    CHECK(m.has_block);
    CHECK(m.dependencies == std::vector<std::string>{"a"});
  }
  SECTION("an unclosed block is ignored") {
    const auto m = parse_script_metadata("# /// script\n# dependencies = [\"a\"]\nprint(1)\n");
    CHECK_FALSE(m.has_block);
    CHECK(m.errors.empty());
  }
  SECTION("a line that is not `#` or `# ...` breaks the block") {
    const auto m = parse_script_metadata("# /// script\n#dependencies = [\"a\"]\n# ///\n");
    CHECK_FALSE(m.has_block);
  }
  SECTION("the opening line must match exactly") {
    CHECK_FALSE(parse_script_metadata("# /// script \n# a = 1\n# ///\n").has_block);
    CHECK_FALSE(parse_script_metadata("#/// script\n# a = 1\n# ///\n").has_block);
    CHECK_FALSE(parse_script_metadata("# ///  script\n# a = 1\n# ///\n").has_block);
    CHECK_FALSE(parse_script_metadata("  # /// script\n# a = 1\n# ///\n").has_block);
  }
  SECTION("the closing line must match exactly") {
    CHECK_FALSE(parse_script_metadata("# /// script\n# a = 1\n# /// \n").has_block);
  }
  SECTION("empty blocks are valid") {
    for (const char* text : {"# /// script\n# ///\n", "# /// script\n#\n# ///\nprint(1)\n",
                             "# /// script\n# ///"}) {
      INFO(text);
      const auto m = parse_script_metadata(text);
      CHECK(m.has_block);
      CHECK(m.errors.empty());
      CHECK(m.dependencies.empty());
      CHECK_FALSE(m.requires_python.has_value());
    }
  }
  SECTION("other block types are ignored, and hide what is inside them") {
    const auto other = parse_script_metadata("# /// pyproject\n# [project]\n# name = 'x'\n# ///\n");
    CHECK_FALSE(other.has_block);
    const auto nested = parse_script_metadata(
        "# /// other-type\n# /// script\n# dependencies = [\"x\"]\n# ///\n");
    CHECK_FALSE(nested.has_block);
    const auto both = parse_script_metadata(
        "# /// pyproject\n# a = 1\n# ///\n\n# /// script\n# dependencies = [\"b\"]\n# ///\n");
    CHECK(both.has_block);
    CHECK(both.dependencies == std::vector<std::string>{"b"});
    // Without a non-comment line between them, the first block runs to the last `# ///`.
    const auto adjacent = parse_script_metadata(
        "# /// pyproject\n# a = 1\n# ///\n# /// script\n# dependencies = [\"b\"]\n# ///\n");
    CHECK_FALSE(adjacent.has_block);
  }
  SECTION("a second script block is an error naming both") {
    const auto m = parse_script_metadata(
        "# /// script\n# dependencies = [\"a\"]\n# ///\nx = 1\n# /// script\n# dependencies = [\"b\"]\n# ///\n");
    REQUIRE(m.errors.size() == 1);
    CHECK(m.errors[0].line == 5);
    CHECK_THAT(m.errors[0].message, Catch::Contains("line 5"));
    CHECK_THAT(m.errors[0].message, Catch::Contains("1, 5"));
    CHECK_THAT(m.errors[0].message, Catch::Contains("only one"));
  }
}

TEST_CASE("PEP 723: TOML errors are reported in the script's line numbering", "[pep723]") {
  SECTION("missing comma") {
    const auto m = parse_script_metadata(
        "print(1)\n"
        "# /// script\n"
        "# dependencies = [\n"
        "#   \"requests\"\n"
        "#   \"rich\",\n"
        "# ]\n"
        "# ///\n");
    REQUIRE(m.errors.size() == 1);
    INFO(m.errors[0].message);
    CHECK(m.errors[0].line == 5);
    CHECK(m.errors[0].column == 5);
    CHECK_THAT(m.errors[0].message, Catch::StartsWith("line 5, column 5: invalid TOML"));
  }
  SECTION("unquoted value; CRLF does not shift lines") {
    const auto m = parse_script_metadata(
        "# /// script\r\n# requires-python = >=3.11\r\n# ///\r\n");
    REQUIRE(m.errors.size() == 1);
    INFO(m.errors[0].message);
    CHECK(m.errors[0].line == 2);
    CHECK(m.errors[0].column >= 21);
  }
}

TEST_CASE("PEP 723: field types and unknown keys", "[pep723]") {
  SECTION("dependencies must be an array of strings") {
    const auto m = parse_script_metadata("# /// script\n# dependencies = \"requests\"\n# ///\n");
    REQUIRE(m.errors.size() == 1);
    CHECK_THAT(m.errors[0].message, Catch::Contains("`dependencies` must be an array of strings"));
    CHECK_THAT(m.errors[0].message, Catch::Contains("found a string"));
    CHECK(m.errors[0].line == 2);
  }
  SECTION("every item must be a string") {
    const auto m = parse_script_metadata("# /// script\n# dependencies = [\n#  \"a\",\n#  1,\n# ]\n# ///\n");
    REQUIRE(m.errors.size() == 1);
    CHECK_THAT(m.errors[0].message, Catch::Contains("item 2 is an integer"));
    CHECK(m.errors[0].line == 4);
    CHECK(m.dependencies == std::vector<std::string>{"a"});
  }
  SECTION("requires-python must be a string") {
    const auto m = parse_script_metadata("# /// script\n# requires-python = 3.11\n# ///\n");
    REQUIRE(m.errors.size() == 1);
    CHECK_THAT(m.errors[0].message, Catch::Contains("`requires-python` must be a string"));
    CHECK_THAT(m.errors[0].message, Catch::Contains("a float"));
  }
  SECTION("tool must be a table; [tool.*] tables are fine") {
    CHECK(parse_script_metadata("# /// script\n# [tool.uv]\n# exclude-newer = \"2024-01-01T00:00:00Z\"\n# ///\n")
              .errors.empty());
    const auto m = parse_script_metadata("# /// script\n# tool = 1\n# ///\n");
    REQUIRE(m.errors.size() == 1);
    CHECK_THAT(m.errors[0].message, Catch::Contains("`tool` must be a table"));
  }
  SECTION("unknown keys are warnings") {
    const auto m = parse_script_metadata("# /// script\n# dependencies = []\n# name = \"x\"\n# ///\n");
    CHECK(m.errors.empty());
    REQUIRE(m.warnings.size() == 1);
    CHECK_THAT(m.warnings[0], Catch::Contains("`name`"));
    CHECK_THAT(m.warnings[0], Catch::Contains("line 3"));
  }
}

TEST_CASE("Merge: by normalised name, later spec wins, order of first appearance", "[merge]") {
  const auto block = parse_all({"requests<3", "rich", "numpy"});
  const auto parameter = parse_all({"Requests>=2.31", "pandas", "RICH==13.0"});
  CHECK(names(engine::merge_requirements(block, parameter)) ==
        std::vector<std::string>{"Requests>=2.31", "RICH==13.0", "numpy", "pandas"});
  // Duplicates within one list follow the same rule.
  CHECK(names(engine::merge_requirements(parse_all({"a==1", "b", "A==2"}), {})) ==
        std::vector<std::string>{"A==2", "b"});
  CHECK(names(engine::merge_requirements({}, parse_all({"Foo.Bar==1", "foo-bar==2"}))) ==
        std::vector<std::string>{"foo-bar==2"});
}

TEST_CASE("validate_script", "[validate]") {
  SECTION("block and parameter merged") {
    const auto v = engine::validate_script(kSpecExample, {"rich>=13", "numpy"}, python("3.11.2"));
    CHECK(v.valid);
    CHECK(v.errors.empty());
    REQUIRE(v.requires_python.has_value());
    CHECK(*v.requires_python == ">=3.11");
    CHECK(names(v.dependencies) == std::vector<std::string>{"requests<3", "rich>=13", "numpy"});
  }
  SECTION("no block, no parameter") {
    const auto v = engine::validate_script("print(1)\n", {}, python("3.11.2"));
    CHECK(v.valid);
    CHECK_FALSE(v.requires_python.has_value());
    CHECK(v.dependencies.empty());
  }
  SECTION("requires-python the interpreter does not satisfy") {
    const auto v = engine::validate_script(kSpecExample, {}, python("3.10.13"));
    CHECK_FALSE(v.valid);
    REQUIRE(v.errors.size() == 1);
    CHECK_THAT(v.errors[0], Catch::Contains("'>=3.11'"));
    CHECK_THAT(v.errors[0], Catch::Contains("3.10.13"));
  }
  SECTION("a pre-release interpreter counts as its release, as pip does") {
    const std::string script = "# /// script\n# requires-python = \">=3.13\"\n# ///\n";
    CHECK(engine::validate_script(script, {}, python("3.13.0rc1")).valid);
    CHECK_FALSE(engine::validate_script(script, {}, python("3.12.1")).valid);
  }
  SECTION("requires-python syntax is checked even without an interpreter version") {
    const auto v = engine::validate_script("# /// script\n# requires-python = \">=3.x\"\n# ///\n",
                                           {}, engine::MarkerEnvironment{});
    CHECK_FALSE(v.valid);
    REQUIRE(v.errors.size() == 1);
    CHECK_THAT(v.errors[0], Catch::StartsWith("requires-python: "));
    CHECK_THAT(v.errors[0], Catch::Contains("PEP 440"));
    CHECK(engine::validate_script("# /// script\n# requires-python = \">=99\"\n# ///\n", {},
                                  engine::MarkerEnvironment{})
              .valid);
  }
  SECTION("invalid dependencies name where they come from") {
    const auto v = engine::validate_script(
        "# /// script\n# dependencies = [\n#   \"ok\",\n#   \"bad>=\",\n# ]\n# ///\n", {"also bad"},
        python("3.11.2"));
    CHECK_FALSE(v.valid);
    REQUIRE(v.errors.size() == 2);
    CHECK_THAT(v.errors[0], Catch::StartsWith("line 4: 'bad>='"));
    CHECK_THAT(v.errors[1], Catch::StartsWith("dependencies parameter: 'also bad'"));
    CHECK(names(v.dependencies) == std::vector<std::string>{"ok"});
  }
  SECTION("dependencies whose markers never apply are fine") {
    const auto v = engine::validate_script("x = 1\n", {"pywin32; sys_platform == 'win32'"},
                                           python("3.11.2"));
    CHECK(v.valid);
    REQUIRE(v.dependencies.size() == 1);
    CHECK(v.dependencies[0].marker == "sys_platform == 'win32'");
  }
  SECTION("metadata errors and warnings pass through") {
    const auto bad_toml = engine::validate_script("# /// script\n# dependencies = [\n# ///\n", {},
                                                  python("3.11.2"));
    CHECK_FALSE(bad_toml.valid);
    REQUIRE(bad_toml.errors.size() == 1);
    CHECK_THAT(bad_toml.errors[0], Catch::StartsWith("line "));
    const auto warned = engine::validate_script("# /// script\n# colour = 1\n# ///\n", {},
                                                python("3.11.2"));
    CHECK(warned.valid);
    CHECK(warned.warnings.size() == 1);
  }
}

TEST_CASE("validate_script: too many or too long dependencies are refused as input, not passed on") {
  const engine::MarkerEnvironment py311 = python("3.11.2");
  std::vector<std::string> many(engine::kMaxRequirements + 1, "six");
  auto v = engine::validate_script("print(1)\n", many, py311);
  CHECK_FALSE(v.valid);
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0] == "257 dependencies asked for; at most 256 are accepted per script");
  many.pop_back();
  CHECK(engine::validate_script("print(1)\n", many, py311).valid);

  const std::string long_url = "pkg @ https://example.invalid/" + std::string(engine::kMaxRequirementLength, 'a');
  v = engine::validate_script("print(1)\n", {long_url}, py311);
  CHECK_FALSE(v.valid);
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].find("dependencies parameter: a dependency of ") == 0);
  const std::string block = "# /// script\n# dependencies = [\"" + long_url + "\"]\n# ///\n";
  v = engine::validate_script(block, {}, py311);
  CHECK_FALSE(v.valid);
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].find("line 2") != std::string::npos);
}
