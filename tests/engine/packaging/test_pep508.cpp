// PEP 508: requirement parsing (names, extras, specifiers, URLs, markers), errors, markers.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "engine/packaging/script_metadata.h"

using engine::parse_requirement;

namespace {

engine::Requirement must_parse(const std::string& text) {
  std::string error;
  auto req = parse_requirement(text, &error);
  INFO(text << " -> " << error);
  REQUIRE(req.has_value());
  return *req;
}

std::string parse_error(const std::string& text) {
  std::string error;
  auto req = parse_requirement(text, &error);
  INFO(text);
  REQUIRE_FALSE(req.has_value());
  return error;
}

engine::MarkerEnvironment linux_311() {
  engine::MarkerEnvironment env;
  env.python_version = "3.11";
  env.python_full_version = "3.11.2";
  env.platform_release = "6.1.0-18-amd64";
  return env;
}

}  // namespace

TEST_CASE("PEP 508: the specification's test strings parse", "[pep508]") {
  // The list from PEP 508's reference test harness.
  for (const char* text :
       {"A", "A.B-C_D", "aa", "name", "name<=1", "name>=3", "name>=3,<2", "name@http://foo.com",
        "name [fred,bar] @ http://foo.com ; python_version=='2.7'",
        "name[quux, strange];python_version<'2.7' and platform_version=='2'",
        "name; os_name=='a' or os_name=='b'",
        "name; os_name=='a' and os_name=='b' or os_name=='c'",
        "name; os_name=='a' and (os_name=='b' or os_name=='c')",
        "name; os_name=='a' or os_name=='b' and os_name=='c'",
        "name; (os_name=='a' or os_name=='b') and os_name=='c'"}) {
    must_parse(text);
  }
}

TEST_CASE("PEP 508: fields of a parsed requirement", "[pep508]") {
  SECTION("name, extras, parenthesised specifiers and a marker") {
    const auto r = must_parse("  Requests[Security , socks] (>=2.8.1, ==2.8.*) ; python_version < \"3.12\"  ");
    CHECK(r.raw == "Requests[Security , socks] (>=2.8.1, ==2.8.*) ; python_version < \"3.12\"");
    CHECK(r.name == "Requests");
    CHECK(r.normalized_name == "requests");
    CHECK(r.extras == std::vector<std::string>{"Security", "socks"});
    CHECK(r.specifier == ">=2.8.1,==2.8.*");
    CHECK(r.url.empty());
    CHECK(r.marker == "python_version < \"3.12\"");
  }
  SECTION("specifiers without parentheses, empty extras") {
    const auto r = must_parse("numpy[]>=1.24,<2");
    CHECK(r.name == "numpy");
    CHECK(r.extras.empty());
    CHECK(r.specifier == ">=1.24,<2");
    CHECK(r.marker.empty());
  }
  SECTION("URL forms") {
    const auto https = must_parse("pip @ https://github.com/pypa/pip/archive/22.0.2.zip");
    CHECK(https.name == "pip");
    CHECK(https.url == "https://github.com/pypa/pip/archive/22.0.2.zip");
    CHECK(https.specifier.empty());
    const auto file = must_parse("Local_Pkg[x]@file:///tmp/local_pkg-1.0-py3-none-any.whl ; os_name == 'posix'");
    CHECK(file.normalized_name == "local-pkg");
    CHECK(file.extras == std::vector<std::string>{"x"});
    CHECK(file.url == "file:///tmp/local_pkg-1.0-py3-none-any.whl");
    CHECK(file.marker == "os_name == 'posix'");
    CHECK(must_parse("pkg @ git+https://example.org/repo.git@v1.0").url ==
          "git+https://example.org/repo.git@v1.0");
  }
}

TEST_CASE("PEP 508: invalid requirements get a reason and a column", "[pep508]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "empty requirement"},
      {"   ", "empty requirement"},
      {"numpy>=", "expected a version after '>='"},
      {"numpy=1.0", "use '=='"},
      {"numpy 1.0", "one requirement per string"},
      {"numpy pandas", "one requirement per string"},
      {"-numpy", "expected a package name"},
      {"numpy-", "must end with a letter or digit"},
      {"numpy[", "expected an extra name"},
      {"numpy[a b]", "expected ',' or ']'"},
      {"numpy (>=1.0", "expected ')'"},
      {"numpy ()", "expected a version specifier"},
      {"numpy>=3.x", "is not a version"},
      {"numpy~=1", "at least two release numbers"},
      {"numpy>=1.*", "only allowed with == and !="},
      {"numpy; ", "expected a marker"},
      {"numpy; python_version >= '3.8' and", "invalid marker"},
      {"numpy; foo == 'x'", "unknown marker variable 'foo'"},
      {"numpy; os.name == 'posix'", "use 'os_name'"},
      {"numpy; python_version >= 3.8", "string values must be quoted"},
      {"numpy; python_version = '3.8'", "use '=='"},
      {"numpy; (python_version >= '3.8'", "expected ')'"},
      {"numpy; python_version >= '3.8')", "unbalanced ')'"},
      {"numpy; python_version >= '3.8", "unterminated string"},
      {"numpy; python_version not '3.8'", "expected 'not in'"},
      {"numpy @ ", "expected a URL"},
      {"numpy @ /tmp/numpy.whl", "needs a scheme"},
      {"numpy @ file:/tmp/numpy.whl", "file:///absolute/path"},
      {"numpy @ https:///numpy.whl", "no host"},
      {"numpy @ https://h/p.whl; python_version < '3'", "whitespace before ';'"},
  };
  for (const auto& [text, reason] : cases) {
    const std::string error = parse_error(text);
    INFO(text << " -> " << error);
    CHECK_THAT(error, Catch::Contains(reason));
    CHECK_THAT(error, Catch::Contains("PEP 508"));
    if (!text.empty() && text.find_first_not_of(' ') != std::string::npos) {
      CHECK_THAT(error, Catch::Contains("(column "));
    }
  }
  // The column points at the offending clause, counted in the text as given.
  CHECK_THAT(parse_error("numpy>=3.x"), Catch::Contains("(column 6)"));
  CHECK_THAT(parse_error("  numpy>=3.x"), Catch::Contains("(column 8)"));
  CHECK_THAT(parse_error("numpy; foo == 'x'"), Catch::Contains("(column 8)"));
}

TEST_CASE("PEP 503 name normalisation", "[pep508]") {
  CHECK(engine::normalize_name("Friendly-Bard") == "friendly-bard");
  CHECK(engine::normalize_name("FRIENDLY__bard") == "friendly-bard");
  CHECK(engine::normalize_name("friendly.-_bard") == "friendly-bard");
  CHECK(engine::normalize_name("ruamel.yaml") == "ruamel-yaml");
}

TEST_CASE("PEP 508 markers evaluate against an interpreter's environment", "[pep508][markers]") {
  const engine::MarkerEnvironment env = linux_311();
  const std::vector<std::pair<std::string, bool>> cases{
      {"python_version >= \"3.8\"", true},
      // Version comparison, not string comparison ("3.11" < "3.9" as strings).
      {"python_version > \"3.9\"", true},
      {"python_version < \"3.10\"", false},
      {"python_version == \"3.11.*\"", true},
      {"python_version ~= \"3.11\"", true},
      {"python_full_version >= '3.11.1'", true},
      {"python_full_version < '3.11.2'", false},
      {"sys_platform == 'win32'", false},
      {"sys_platform == 'linux' and platform_machine == 'x86_64'", true},
      {"os_name == 'nt' or python_version >= '3.11'", true},
      {"os_name == 'nt' or os_name == 'posix' and python_version < '3'", false},
      {"(os_name == 'nt' or os_name == 'posix') and python_version >= '3'", true},
      {"'linux' in sys_platform", true},
      {"'arm' not in platform_machine", true},
      {"implementation_name == 'cpython' and platform_python_implementation == 'CPython'", true},
      {"implementation_version >= '3.11'", true},
      {"platform_system != 'Windows'", true},
      {"platform_release >= '6'", true},
      {"extra == 'test'", false},
      {"python_version<'3.12'and os_name=='posix'", true},
      {"'3.8' < python_version", true},  // a literal on the left
      {"sys_platform < 'm'", true},       // not a version: string comparison
      {"python_version >= '3.8' and", false},  // invalid: never applies
  };
  for (const auto& [marker, expected] : cases) {
    INFO(marker);
    CHECK(engine::evaluate_marker(marker, env) == expected);
  }
  engine::MarkerEnvironment py39 = env;
  py39.python_version = "3.9";
  py39.python_full_version = "3.9.18";
  CHECK(engine::evaluate_marker("python_version < '3.10'", py39));
  CHECK_FALSE(engine::evaluate_marker("python_version > '3.9'", py39));
}

TEST_CASE("PEP 508 marker syntax check", "[pep508][markers]") {
  CHECK_FALSE(engine::marker_syntax_error("python_version >= '3.8' and os_name == 'posix'"));
  const auto error = engine::marker_syntax_error("python_version >= '3.8' or");
  REQUIRE(error.has_value());
  CHECK_THAT(*error, Catch::Contains("PEP 508"));
  CHECK_THAT(*error, Catch::Contains("column 27"));
}

TEST_CASE("PEP 508 markers: deep nesting is refused, not a stack overflow", "[pep508][markers]") {
  // Found by fuzz/fuzz_pep508 (fuzz/regressions/pep508/): "y; (((((..." a few thousand levels
  // deep exhausted the stack of the recursive-descent parser, i.e. crashed the server.
  auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '(') + "python_version >= '3'" +
           std::string(static_cast<std::size_t>(depth), ')');
  };
  CHECK_FALSE(engine::marker_syntax_error(nested(64)));
  const auto error = engine::marker_syntax_error(nested(65));
  REQUIRE(error.has_value());
  CHECK_THAT(*error, Catch::Contains("nested deeper than 64"));
  engine::MarkerEnvironment env;
  env.python_version = "3.11";
  env.python_full_version = "3.11.2";
  CHECK(engine::evaluate_marker(nested(64), env));
  CHECK_FALSE(engine::evaluate_marker(nested(1 << 20), env));
  std::string why;
  CHECK_FALSE(engine::parse_requirement("y; " + std::string(1 << 20, '('), &why));
  CHECK_THAT(why, Catch::Contains("nested deeper than 64"));
}
