// The control channel between the server and a zygote: a SOCK_SEQPACKET socketpair carrying
// small fixed-layout binary messages, with file descriptors attached as SCM_RIGHTS.
//
//   zygote -> server  READY    after warm-up (python version, zygote RSS)
//   server -> zygote  RUN      + fds {script memfd (sealed), stdout write end, stderr write end,
//                              result write end (engine/execution/result_channel.h)}
//   zygote -> server  STARTED  + fd {pidfd of the run's child}
//   zygote -> server  EXITED   wait status + rusage of the run's process tree
//   zygote -> server  REFUSED  the zygote could not fork this run (reason)
// With a network per run (--network routed: each run in a network namespace of its own, which the
// server links into the zygote's user-mode network, sandbox/run_network.h):
//   zygote -> server  SPARE         + fd {pidfd of a new spare's init}: link its namespace
//   server -> zygote  SPARE_LINKED  that spare's network is ready (or why it is not); only a
//                                   linked spare takes a run
// With direct hand-off (--direct-spares 1, native backend), the server hands runs to spares itself:
//   zygote -> server  SPARE (direct) + fds {pidfd of its init, the spare's hand-off socket}: the
//                                   spare is the server's (linked first, if routed)
//   server -> spare   RUN           on the hand-off socket, as the zygote would send it
//   server -> zygote  TAKEN         that spare took that run: the zygote reports its EXITED
//   A run the server has no spare for goes to the zygote as RUN, as above.
// A session (engine/sessions/) is a run whose RUN carries kRunFlagSession: its process does not
// run a script but becomes the session's root interpreter, talking to the server over the socket
// attached to RUN (engine/zygote/session_holder.h); the zygote tells its init first, which then
// outlives that process while the session has others (engine/zygote/session_signal.h). On that socket, between the server and each
// process holding a session's state (a "holder"):
//   server -> holder  STEP          + fds {script, stdout, stderr, result, [child control socket],
//                                   [files request]}: run one step (in a child, or in place)
//   holder -> server  STEP_STARTED  + fd {pidfd of the step's process} (sent by that process)
//   holder -> server  STEP_EXITED   a child died (wait status + rusage): a step's process, or a
//                                   spare (by its pid: the server knows which step it took)
//   holder -> server  HOLDER_READY  this process now holds a state (after its step, or at start)
//   server -> holder  PREPARE       fork the next step's process ahead (this holder is a head)
//   holder -> server  HOLDER_SPARE  + fds {the spare's link, its pidfd}: a child forked ahead
//                                   holding this state; the spare is the server's
//   server -> spare   STEP          on the spare's link, as to its holder: the spare is the
//                                   step's process (no STEP_STARTED: the server has its pidfd)
//
// Shared by the server (mpes_engine) and the zygote binary, so it uses neither asio nor spdlog.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "sandbox/unique_fd.h"

namespace engine::zygote {

// The fd number the zygote finds its end of the control socket on.
inline constexpr int kControlFd = 3;
// The fd number a run's process finds the write end of its result channel on (the runner marks
// it close-on-exec: the script's subprocesses do not inherit it).
inline constexpr int kRunResultFd = 5;
// Largest encoded message; strings are cut to fit.
inline constexpr std::size_t kMaxMessageBytes = 4096;
inline constexpr std::size_t kMaxFdsPerMessage = 8;

struct ReadyMessage {
  std::string python_version;  // sys.version's first word, e.g. "3.11.2"
  std::uint64_t rss_bytes = 0;  // the zygote's RSS after warm-up
  std::uint32_t tasks = 0;      // threads in the zygote (1 = can fork)
  std::string warnings;         // e.g. preloads that failed, one per line
};

// Per-run flags.
inline constexpr std::uint32_t kRunFlagNone = 0;
// A files request (engine/files/files_request.h) is attached after the result fd.
inline constexpr std::uint32_t kRunFlagFiles = 1u << 0;
// The run is a session's sandbox: the one fixed fd is the session's control socket.
inline constexpr std::uint32_t kRunFlagSession = 1u << 1;

struct RunMessage {
  std::uint64_t run_id = 0;
  std::uint32_t timeout_seconds = 0;  // the wall deadline (server-owned); the CPU limit default
  std::uint32_t flags = kRunFlagNone;
  // Attached fds, in this order (then the cgroup.procs fds).
  static constexpr std::size_t kScriptFd = 0, kStdoutFd = 1, kStderrFd = 2, kResultFd = 3, kFdCount = 4;
  static constexpr std::size_t kFilesFd = 4;          // with kRunFlagFiles
  static constexpr std::size_t kSessionSocketFd = 0;  // with kRunFlagSession (the only fixed fd)
  // How many fds precede the cgroup.procs fds for these flags.
  static constexpr std::size_t fixed_fds(std::uint32_t flags) {
    return (flags & kRunFlagSession) != 0 ? 1 : kFdCount + ((flags & kRunFlagFiles) != 0 ? 1 : 0);
  }
};

struct StartedMessage {
  std::uint64_t run_id = 0;
  std::int32_t pid = 0;  // in the zygote's pid namespace (for logs only); the pidfd is attached
};

// Exit flags.
inline constexpr std::uint32_t kExitSetupFailed = 1u << 0;  // sandbox setup failed; detail says why

struct ExitedMessage {
  std::uint64_t run_id = 0;
  std::int32_t wait_status = 0;  // as from waitpid(): of the script's process
  std::int64_t user_cpu_us = 0;  // rusage of the run's whole reaped process tree
  std::int64_t system_cpu_us = 0;
  std::int64_t max_rss_kb = 0;
  std::uint32_t flags = 0;
  std::uint64_t zygote_rss_bytes = 0;
  std::string detail;  // setup failure text
};

struct RefusedMessage {
  std::uint64_t run_id = 0;
  std::string reason;
};

struct SpareMessage {
  std::int32_t pid = 0;  // the spare's init, in the zygote's pid namespace (names the spare)
  std::uint32_t direct = 0;  // 1: the hand-off socket is attached after the pidfd
};

struct TakenMessage {
  std::uint64_t run_id = 0;
  std::int32_t pid = 0;  // the direct spare the server sent the run to
};

struct SpareLinkedMessage {
  std::int32_t pid = 0;
  std::uint32_t ok = 0;  // 1: linked; 0: not (reason), and the spare must not take a run
  std::string reason;
};

// --- On a session's control sockets (server <-> holder processes) ---

// Step flags.
inline constexpr std::uint32_t kStepInPlace = 1u << 0;  // run in the holder itself (it has threads)
inline constexpr std::uint32_t kStepFiles = 1u << 1;    // a files request is attached last

struct StepMessage {
  std::uint64_t step_id = 0;      // unique in the server; names the step's process from now on
  std::uint64_t step_number = 0;  // the session's step this creates (for file names)
  std::uint32_t cpu_seconds = 0;  // soft RLIMIT_CPU of the step (0 = none)
  std::uint32_t flags = 0;
  // Attached fds: script, stdout, stderr, result, then the child's control socket (not in
  // place), then the files request (kStepFiles).
  static constexpr std::size_t kScriptFd = 0, kStdoutFd = 1, kStderrFd = 2, kResultFd = 3, kBaseFds = 4;
  static constexpr std::size_t fd_count(std::uint32_t flags) {
    return kBaseFds + ((flags & kStepInPlace) != 0 ? 0 : 1) + ((flags & kStepFiles) != 0 ? 1 : 0);
  }
};

struct StepStartedMessage {
  std::uint64_t step_id = 0;
  std::int32_t pid = 0;  // in the session's pid namespace (for logs); the pidfd is attached
};

struct StepExitedMessage {
  std::uint64_t step_id = 0;  // the step the dead process was started for (0: a spare, by pid)
  std::int32_t wait_status = 0;
  std::int64_t user_cpu_us = 0;
  std::int64_t system_cpu_us = 0;
  std::int64_t max_rss_kb = 0;
  std::int32_t pid = 0;  // the dead process, in the session's pid namespace
};

// A spare a holder forked (its link and pidfd attached, in that order). `generation`: how many
// steps the holder has run in place, which change its state: a spare forked before the last of
// them holds an older state, and the server refuses it.
struct HolderSpareMessage {
  std::int32_t pid = 0;
  std::uint32_t generation = 0;
};

struct HolderReadyMessage {
  std::uint64_t step_id = 0;   // the step whose state this process now holds (0: the root)
  std::int32_t exit_code = 0;  // the step's status as the runner computed it (-N: signal N)
  std::uint32_t tasks = 1;     // threads in the process: more than one, and it cannot fork
  std::int64_t user_cpu_us = 0;  // the step's own CPU
  std::int64_t system_cpu_us = 0;
  std::int64_t max_rss_kb = 0;
};

struct PrepareMessage {
  std::uint32_t reserved = 0;
};

using Message = std::variant<ReadyMessage, RunMessage, StartedMessage, ExitedMessage, RefusedMessage,
                             StepMessage, StepStartedMessage, StepExitedMessage, HolderReadyMessage,
                             PrepareMessage, SpareMessage, SpareLinkedMessage, TakenMessage,
                             HolderSpareMessage>;

std::vector<std::uint8_t> encode(const Message& message);
// Rejects unknown types, truncated or oversized payloads and trailing bytes; `error` says which.
bool decode(std::span<const std::uint8_t> bytes, Message& out, std::string& error);

// Sends one message with `fds` attached (MSG_NOSIGNAL). Returns 0 or an errno value
// (EAGAIN on a non-blocking socket whose buffer is full).
int send_message(int socket_fd, const Message& message, std::span<const int> fds = {});
// The same, never waiting (MSG_DONTWAIT), whatever the socket's own flags: for a socket whose
// other end runs a script's code (a session's processes), which may stop reading it, or hand
// the server a socket whose flags it controls. EAGAIN when its buffer is full.
int send_message_now(int socket_fd, const Message& message, std::span<const int> fds = {});

struct Received {
  enum class Status { message, eof, would_block, error } status = Status::error;
  Message message;
  std::vector<sandbox::UniqueFd> fds;  // received with MSG_CMSG_CLOEXEC
  // Some attached fds did not arrive (the receiver was out of fds, EMFILE, or more than
  // kMaxFdsPerMessage were sent): `fds` holds those that did. The message itself is whole.
  bool fds_truncated = false;
  std::string error;                   // for Status::error
};
// Receives one message (one datagram); never blocks.
Received receive_message(int socket_fd);
// The same, waiting for a message (EINTR is retried).
Received receive_message_blocking(int socket_fd);

}  // namespace engine::zygote
