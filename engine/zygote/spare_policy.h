// When the zygote replaces a spare that a run has just taken (engine/zygote/main.cpp: a run it
// dispatched itself, or the server's TAKEN). Pure rules, unit-tested.
//
// Making a spare takes a CPU for about a millisecond (the zygote's clone with the run's
// namespaces, then the spare's own preparation), and on a machine of few cores that competes
// with the run that has just started. So after a pause the replacement waits for that run's
// EXITED, when the run is over, unless no spare is left for the next run (then one is made at
// once). Under back-to-back runs (one ended within kBackToBack) the next run arrives before that
// EXITED, and a replacement made only then is still being prepared when it does: the next run
// waits for it. There the spares are topped up at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace engine::zygote {

inline constexpr std::chrono::milliseconds kBackToBack{10};

enum class SpareReplacement {
  after_exit,  // nothing now: the spares are topped up once the run's EXITED is sent
  one_now,     // one spare now (none is left), the others after EXITED
  all_now,     // every missing spare now
};

// `spares_left`: spares still waiting for a run; `since_last_exit`: time since the zygote last
// sent EXITED (none before its first).
inline SpareReplacement replace_taken_spare(std::size_t spares_left,
                                            std::optional<std::chrono::steady_clock::duration> since_last_exit) {
  if (since_last_exit && *since_last_exit < kBackToBack) return SpareReplacement::all_now;
  return spares_left == 0 ? SpareReplacement::one_now : SpareReplacement::after_exit;
}

}  // namespace engine::zygote
