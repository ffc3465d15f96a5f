// How the zygote tells a run's init that the run holds a session (engine/zygote/main.cpp,
// note_session): kSessionSignal, sent before the session's RUN reaches the run's process. Such an
// init lives until the session's last process has ended, not until step 0's process has: a step
// may kill every other process of its session (kill(-1)) and live on with the newest state.
//
// Only the zygote may say it: a run's script that made its own init outlive it would keep what
// it left running alive after its answer. The zygote is outside the run's pid namespace, so its
// signal shows si_pid 0 there; kill() from inside shows the sender's pid, and the kernel refuses
// a sigqueue claiming SI_USER. (Landlock's signal scoping already stops a run's signals to its
// init where the kernel has it; this rule holds where it does not.) Pure, unit-tested.
#pragma once

#include <signal.h>

namespace engine::zygote {

inline constexpr int kSessionSignal = SIGUSR1;

inline bool sent_by_zygote(const siginfo_t& info) { return info.si_code == SI_USER && info.si_pid == 0; }

}  // namespace engine::zygote
