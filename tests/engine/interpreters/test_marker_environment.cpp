// The one marker environment of an interpreter: what its probe recorded, with the gaps filled.
#include <catch2/catch.hpp>

#include <sys/utsname.h>

#include <string>

#include "engine/interpreters/interpreter.h"

TEST_CASE("marker_environment keeps every probed value", "[markers][interpreters]") {
  engine::Interpreter py;
  py.version = "3.12.1";
  py.major_minor = "3.12";
  py.markers.python_version = "3.12";
  py.markers.python_full_version = "3.12.1";
  py.markers.platform_machine = "aarch64";
  py.markers.platform_release = "6.1.0-18-arm64";
  py.markers.implementation_version = "3.12.1";
  const auto env = engine::marker_environment(py);
  CHECK(env.python_version == "3.12");
  CHECK(env.python_full_version == "3.12.1");
  CHECK(env.platform_machine == "aarch64");  // not this host's, not a default
  CHECK(env.platform_release == "6.1.0-18-arm64");
  CHECK(env.implementation_version == "3.12.1");
}

TEST_CASE("marker_environment fills what no probe said", "[markers][interpreters]") {
  engine::Interpreter py;
  py.version = "3.10.13";
  py.major_minor = "3.10";
  SECTION("nothing probed: the version, and the platform of this host") {
    const auto env = engine::marker_environment(py);
    CHECK(env.python_version == "3.10");
    CHECK(env.python_full_version == "3.10.13");
    utsname host{};
    REQUIRE(::uname(&host) == 0);
    CHECK(env.platform_machine == host.machine);
    CHECK(env.platform_system == host.sysname);
  }
  SECTION("a probe without the full version") {
    py.markers.python_version = "3.10";
    py.markers.platform_machine = "ppc64le";
    const auto env = engine::marker_environment(py);
    CHECK(env.python_full_version == "3.10.13");
    CHECK(env.platform_machine == "ppc64le");
  }
}
