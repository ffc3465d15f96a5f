// PEP 440: version parsing/normalisation, ordering, specifier validation and matching.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "engine/packaging/pep440.h"
#include "engine/packaging/script_metadata.h"

using engine::pep440::parse_version;

TEST_CASE("PEP 440 versions normalise the spellings the specification allows", "[pep440]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"1.0", "1.0"},
      {"v1.0", "1.0"},
      {" 1.0\t", "1.0"},
      {"01.002", "1.2"},
      {"1.0-alpha1", "1.0a1"},
      {"1.0.A.1", "1.0a1"},
      {"1.0beta", "1.0b0"},
      {"1.0c1", "1.0rc1"},
      {"1.0preview2", "1.0rc2"},
      {"1.0_pre3", "1.0rc3"},
      {"1.0-1", "1.0.post1"},
      {"1.0.rev3", "1.0.post3"},
      {"1.0r", "1.0.post0"},
      {"1.0.POST1", "1.0.post1"},
      {"1.0-dev", "1.0.dev0"},
      {"1.0a1.post2.dev3", "1.0a1.post2.dev3"},
      {"1!2.0", "1!2.0"},
      {"0!2.0", "2.0"},
      {"1.0+Ubuntu-1", "1.0+ubuntu.1"},
      {"1.0+local.007", "1.0+local.7"},
  };
  for (const auto& [input, normalised] : cases) {
    INFO(input);
    const auto v = parse_version(input);
    REQUIRE(v.has_value());
    CHECK(v->str() == normalised);
  }
}

TEST_CASE("PEP 440 rejects what is not a version", "[pep440]") {
  for (const char* bad : {"", "abc", "1.0+", "1.0+a..b", "1..0", "1.0-", "1.0.*", "1.0 rc1",
                          "3.x", "1.0post1 dev", "=1.0", "1.0+loc@l"}) {
    INFO(bad);
    CHECK_FALSE(parse_version(bad).has_value());
  }
}

TEST_CASE("PEP 440 ordering follows the specification's example sequence", "[pep440]") {
  // The ordered list from PEP 440's "Summary of permitted suffixes and relative ordering".
  const std::vector<std::string> ordered{
      "1.0.dev456", "1.0a1",          "1.0a2.dev456",        "1.0a12.dev456", "1.0a12",
      "1.0b1.dev456", "1.0b2",        "1.0b2.post345.dev456", "1.0b2.post345", "1.0rc1.dev456",
      "1.0rc1",     "1.0",            "1.0+abc.5",           "1.0+abc.7",     "1.0+5",
      "1.0.post456.dev34", "1.0.post456", "1.0.15",          "1.1.dev1"};
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    for (std::size_t j = i + 1; j < ordered.size(); ++j) {
      INFO(ordered[i] << " < " << ordered[j]);
      CHECK(*parse_version(ordered[i]) < *parse_version(ordered[j]));
      CHECK(*parse_version(ordered[j]) > *parse_version(ordered[i]));
    }
  }
  CHECK(*parse_version("1.0") == *parse_version("1.0.0"));
  CHECK(*parse_version("1.0a") == *parse_version("1.0a0"));
  CHECK(*parse_version("1!1.0") > *parse_version("2.0"));
  CHECK(*parse_version("3.10") > *parse_version("3.9"));
  // Numbers beyond 64 bits still compare numerically.
  CHECK(*parse_version("20240101123456789012345") > *parse_version("20240101123456789012344"));
  CHECK(*parse_version("1.0+abc") < *parse_version("1.0+abd"));
  CHECK(*parse_version("1.0+1.2") < *parse_version("1.0+1.2.0"));
}

TEST_CASE("PEP 440 specifier sets: valid and invalid forms", "[pep440]") {
  for (const char* good : {"", "  ", ">=3.9", "~=3.10", "==3.11.*", "!=3.11.*", "<4", "> 3.9",
                           ">= 3.9 , < 3.13", "===foobar", "==1.0+local", "!=1.0+local",
                           "~=2.2.post3", "~=1.4.5a4", "==1!2.0.*", "<=3.12.0rc1"}) {
    INFO(good);
    std::string error;
    CHECK(engine::is_valid_specifier_set(good, &error));
    CHECK(error.empty());
  }
  const std::vector<std::pair<std::string, std::string>> bad{
      {"~=3", "at least two release numbers"},
      {">=3.*", "only allowed with == and !="},
      {"==3.*.1", "wildcard"},
      {"=3.9", "use '=='"},
      {"3.9", "must start with an operator"},
      {">=3.x", "is not a version"},
      {">=1.0+local", "local version label"},
      {"~=1.0.*", "only allowed with == and !="},
      {"==", "a version must follow '=='"},
      {">=3.9,,<4", "empty clause"},
      {">=3.9,", "empty clause"},
      {">=3.9 <4", "whitespace"},
  };
  for (const auto& [spec, reason] : bad) {
    INFO(spec);
    std::string error;
    CHECK_FALSE(engine::is_valid_specifier_set(spec, &error));
    CHECK_THAT(error, Catch::Contains(reason));
    CHECK_THAT(error, Catch::Contains("PEP 440"));
  }
}

TEST_CASE("PEP 440 specifier matching", "[pep440]") {
  struct Case {
    const char* spec;
    const char* version;
    bool expected;
  };
  const std::vector<Case> cases{
      {">=3.9", "3.11.2", true},
      {">=3.9", "3.8.18", false},
      {"<3.11", "3.11.0rc1", false},  // <V excludes pre-releases of V
      {"<3.11rc2", "3.11.0rc1", true},
      {"<=3.11", "3.11.0rc1", true},
      {"<1.7", "1.6.9", true},
      {"<1.7", "1.7.0.dev1", false},
      {">1.7", "1.7.1", true},
      {">1.7", "1.7.0.post1", false},  // >V excludes post-releases of V
      {">1.7.post2", "1.7.0.post3", true},
      {">1.7", "1.7+local", false},
      {"~=3.10", "3.11.2", true},
      {"~=3.10", "4.0", false},
      {"~=3.10.2", "3.10.1", false},
      {"~=3.10.2", "3.10.9", true},
      {"~=3.10.2", "3.11.0", false},
      {"~=2.2.post3", "2.3", true},
      {"~=2.2.post3", "2.2.post2", false},
      {"==3.11.*", "3.11.7", true},
      {"==3.11.*", "3.11", true},
      {"==3.11.0.*", "3.11", true},
      {"==3.1.*", "3.11.0", false},
      {"==3.11.*", "3.1.1", false},
      {"==1.0.*", "1.0rc1", true},
      {"==1!1.*", "1.0", false},
      {"!=3.11.*", "3.12.0", true},
      {"!=3.11.*", "3.11.4", false},
      {"==1.0", "1.0.0", true},
      {"==1.0", "1.0+local", true},
      {"==1.0+local", "1.0", false},
      {"==1.0+local", "1.0+LOCAL", true},
      {"!=1.0", "1.0.1", true},
      {"===1.0", "1.0", true},
      {"===1.0", "1.0.0", false},
      {"===foobar", "FooBar", true},
      {">=3.9,<3.13", "3.12.1", true},
      {">=3.9,<3.13", "3.13.0", false},
      {"", "3.11", true},
      {">=1!1.0", "2.0", false},
      {"~=3", "3.1", false},              // invalid specifier
      {">=3.9", "not-a-version", false},  // invalid version
  };
  for (const Case& c : cases) {
    INFO(c.spec << " contains " << c.version);
    CHECK(engine::specifier_set_contains(c.spec, c.version) == c.expected);
  }
}
