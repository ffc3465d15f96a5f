// One run from its dispatch to a zygote to the evidence of its end: the script as a sealed
// memfd, stdout/stderr/result pipes read on the io_context, the run's cgroup, the deadline, and
// the kill. It reports once, upward, through its DoneFn; it knows nothing of queues or pools.
//
//   start() -> running --exited + every pipe at EOF-----------------------------> done
//                      --exited, a pipe still open: drain for kPipeDrainGrace ----> done
//                      --the runner's end record, every pipe at EOF: kill -------> done
//                        (answer_at_end_record, with a cgroup of its own and the init's pidfd)
//                      --deadline or cancel(): kill, answer within kKillAnswerWithin-> done
//                      --fail() (zygote lost, cannot prepare): kill -------------> done at once
// The kill goes to the run's init through its pidfd, which takes the run's whole pid namespace
// with it (a kill asked for before the pidfd arrives is sent when it does).
//
// The end record: the runner (python_stubs/runner.py) writes it after everything python3 does
// at exit (threads joined, atexit, flushes), then closes its streams and exits. Its exit code
// with every stream closed needs nothing more from the zygote: the run is answered then, while
// its memory is still being torn down, and its init is killed (the kernel finishes the teardown
// off the answer's path; a script that wrote the record itself and went on is stopped there,
// having said no more than it could by exiting). Its usage and the end reason's evidence are the
// cgroup's. Without the record (killed, a signal, the channel closed) the init's wait status.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/event_loop.h"
#include "engine/execution/outcome.h"
#include "engine/execution/output_capture.h"
#include "engine/execution/result_channel.h"
#include "engine/execution/run_cgroups.h"
#include "engine/files/work_files.h"
#include "engine/pool/zygote_process.h"
#include "sandbox/cgroup.h"
#include "sandbox/unique_fd.h"

namespace engine {

class Execution : public std::enable_shared_from_this<Execution> {
 public:
  struct Config {
    std::size_t max_output_bytes = 102400;
    ResultLimits result_limits;
    RunCgroups* cgroups = nullptr;  // the server's run cgroups (each run takes one); null: none of its own
    asio::any_io_executor cgroup_remover;  // removes the run's cgroup off the loop (blocking rmdir)
    // A run (not a session's step) may be answered at its runner's end record (below): where its
    // cgroup counts memory and processes, so that the end reason needs nothing from its rusage.
    bool answer_at_end_record = false;
  };
  // The evidence has the run's own part filled in (see RunEvidence: dispatched, duration,
  // timed_out, cancelled, exited, cgroup, streams, rich results, service_error).
  using DoneFn = std::function<void(RunEvidence)>;

  static constexpr std::chrono::milliseconds kKillAnswerWithin{300};
  static constexpr std::chrono::milliseconds kPipeDrainGrace{200};

  Execution(asio::io_context& io, std::uint64_t id, Config config, DoneFn done);
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  // How the run's fds reach the process that runs it: a zygote (a run) or a session's holder (a
  // step, engine/sessions/). fds: script, stdout, stderr, result, [the files request when
  // `files`], then cgroup.procs fds. False, with why, when it cannot be sent.
  using Launch = std::function<bool(std::vector<int> fds, bool files, ZygoteProcess::RunCallbacks callbacks,
                                    std::string& why)>;

  // Sends the run to `zygote`. A failure to prepare or send ends the run at once (done is called
  // before start returns). `files`: input and output files (none when null).
  void start(const std::shared_ptr<ZygoteProcess>& zygote, const std::string& script,
             std::uint32_t timeout_seconds, const FilesRequest* files = nullptr);
  void start(Launch launch, const std::string& script, std::uint32_t timeout_seconds,
             const FilesRequest* files = nullptr);
  // The caller no longer wants it: killed, answered as cancelled (unless it had already ended).
  void cancel();
  // The service failed under it: killed, answered at once with `message`.
  void fail(const std::string& message);
  // The server stops: killed and answered at once as cancelled.
  void stop();

  bool finished() const { return state_ == State::finished; }
  std::uint64_t id() const { return id_; }

 private:
  enum class State { idle, running, ending, draining, finished };

  void read_stream(int which);
  void on_exited(const zygote::ExitedMessage& exited);
  void on_deadline();
  void kill();
  void answer_after(std::chrono::milliseconds delay);
  void maybe_finish();
  void finish();

  asio::io_context& io_;
  std::uint64_t id_;
  Config config_;
  DoneFn done_;
  State state_ = State::idle;

  OutputCapture out_capture_, err_capture_;
  ResultDecoder result_decoder_;
  // stdout, stderr and the runner's result channel, in that order.
  std::array<asio::posix::stream_descriptor, 3> pipes_;
  // Only ever read into: not zeroed (192 KiB of memset per run otherwise).
  std::array<std::array<char, 64 * 1024>, 3> buffers_;
  std::array<bool, 3> eof_{};
  std::shared_ptr<void> wide_pipe_;  // a place among the widened stdout pipes (execution.cpp)

  Launch launch_;  // kept until the end: what it captured stays alive meanwhile
  sandbox::UniqueFd pidfd_;
  bool kill_when_started_ = false;
  sandbox::RunCgroup cgroup_;
  sandbox::CgroupCounters cgroup_stats_;  // its counter files, opened once the run was sent
  asio::steady_timer deadline_;
  asio::steady_timer answer_timer_;  // the answer bound after a kill, then the pipe drain grace

  std::optional<zygote::ExitedMessage> exited_;
  bool answered_at_end_record_ = false;  // exited_ is the runner's record: the init is killed
  std::int64_t killed_tree_cpu_us_ = -1;
  std::optional<std::string> service_error_;
  bool timed_out_ = false;
  bool cancelled_ = false;
  std::chrono::steady_clock::time_point dispatched_at_;
  std::chrono::steady_clock::time_point ended_at_;
};

}  // namespace engine
