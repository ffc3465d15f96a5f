// When the zygote replaces a spare a run has taken: after that run's EXITED following a pause
// (one at once if none is left), every missing one at once under back-to-back runs.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include "engine/zygote/spare_policy.h"

using engine::zygote::kBackToBack;
using engine::zygote::replace_taken_spare;
using engine::zygote::SpareReplacement;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("after a pause a taken spare is replaced once its run has ended, unless none is left",
          "[zygote][spare-policy]") {
  CHECK(replace_taken_spare(1, seconds(2)) == SpareReplacement::after_exit);
  CHECK(replace_taken_spare(3, kBackToBack) == SpareReplacement::after_exit);
  CHECK(replace_taken_spare(0, seconds(2)) == SpareReplacement::one_now);
}

TEST_CASE("before any run has ended, only a missing last spare is made at once", "[zygote][spare-policy]") {
  CHECK(replace_taken_spare(1, std::nullopt) == SpareReplacement::after_exit);
  CHECK(replace_taken_spare(0, std::nullopt) == SpareReplacement::one_now);
}

TEST_CASE("under back-to-back runs every missing spare is made at once", "[zygote][spare-policy]") {
  CHECK(replace_taken_spare(1, milliseconds(0)) == SpareReplacement::all_now);
  CHECK(replace_taken_spare(1, milliseconds(3)) == SpareReplacement::all_now);
  CHECK(replace_taken_spare(0, kBackToBack - milliseconds(1)) == SpareReplacement::all_now);
}
