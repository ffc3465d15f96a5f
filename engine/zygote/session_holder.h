// The processes of a session (engine/sessions/), inside its sandbox: each one holds one state of
// the session's interpreter (a "holder"). The zygote hands a prepared run child a RUN with
// kRunFlagSession; that process locks itself down like a run and becomes the session's root
// holder (the fresh state, step 0). Then, on the holder's control socket (fd kHolderControlFd):
//
//   STEP      the holder forks a child for it, which reports STEP_STARTED itself, on its
//             holder's control socket, before the step's first line (a step may kill its holder
//             at once: the step still started). Usually the server has sent the step to a child
//             forked ahead instead, a "spare": a holder told PREPARE forks one, which rehearses
//             a step, and hands its link and pidfd to the server (HOLDER_SPARE); the server
//             sends the step on that link. Either child runs the step in the inherited
//             interpreter and, when the step ends normally, reports HOLDER_READY on its own
//             control socket and becomes the holder of the new state. The parent stays as it
//             was: the previous state, frozen (a copy-on-write snapshot). When the child dies
//             instead (timeout, crash, os._exit, OOM), the parent reports STEP_EXITED and still
//             holds the previous state.
//   STEP in place (kStepInPlace): a holder with threads cannot fork safely, so the step runs
//             in the holder itself (no snapshot).
//   PREPARE   fork a spare now (this holder is a session's head, and the server holds no spare
//             of it). Only the server asks, so it always knows whether a spare is on its way: a
//             holder forking one on its own could cross a step the server sent it meanwhile.
//   EOF       the server released this state: the process exits.
// Processes a step starts are killed when the step ends (its process group, and every child
// of the step's process, which is their subreaper meanwhile).
// Everything a holder sends is untrusted by the server: it runs the session's own code.
#pragma once

#include "engine/zygote/libpython.h"

namespace engine::zygote {

// The fd a holder finds its control socket on (and a step's process, from the step's start).
inline constexpr int kHolderControlFd = 4;

// The runner's session functions (python_stubs/session.py), resolved once in the zygote.
struct SessionRunner {
  const LibPython* py = nullptr;
  void* globals = nullptr;       // the runner's module dict
  void* start = nullptr;         // _mpes_session_start: in the root, once
  void* fork_prepare = nullptr;  // _mpes_fork_prepare: in a holder, right before it forks
  void* forked = nullptr;        // _mpes_forked: in the child, right after
  void* spare = nullptr;         // _mpes_step_spare: in a spare, before its step arrives
  void* begin = nullptr;         // _mpes_step_begin / _finish / _failed: one step
  void* finish = nullptr;
  void* failed = nullptr;

  bool complete() const {
    return py != nullptr && globals != nullptr && start != nullptr && fork_prepare != nullptr &&
           forked != nullptr && spare != nullptr && begin != nullptr && finish != nullptr &&
           failed != nullptr;
  }
};

// In the session's root process, once its sandbox is locked down, with the control socket on
// kHolderControlFd and fds 0-2 on /dev/null. Never returns.
[[noreturn]] void serve_session(const SessionRunner& runner);

}  // namespace engine::zygote
