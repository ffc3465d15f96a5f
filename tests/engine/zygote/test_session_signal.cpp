// Only the zygote may tell a run's init that it holds a session (engine/zygote/session_signal.h).
#include <catch2/catch.hpp>

#include <signal.h>

#include "engine/zygote/session_signal.h"

namespace {
siginfo_t info(int code, pid_t pid) {
  siginfo_t i{};
  i.si_signo = engine::zygote::kSessionSignal;
  i.si_code = code;
  i.si_pid = pid;
  return i;
}
}  // namespace

TEST_CASE("an init takes the session word only from outside its pid namespace", "[session_signal]") {
  using engine::zygote::sent_by_zygote;
  CHECK(sent_by_zygote(info(SI_USER, 0)));        // kill() by the zygote: its pid is not visible inside
  CHECK_FALSE(sent_by_zygote(info(SI_USER, 7)));  // kill() by a process of the run
  CHECK_FALSE(sent_by_zygote(info(SI_QUEUE, 0)));  // sigqueue with a forged pid
  CHECK_FALSE(sent_by_zygote(info(SI_TKILL, 0)));
}
