// The steps of one session whose state is kept, each by the handle of the process holding it
// (engine/sessions/holder_link.h), and which one the next step starts from (the head). Pure
// bookkeeping: which handles a change releases is returned, the caller lets those processes go.
//
// Retention: step 0 (the fresh interpreter) is kept while its process lives, plus the last
// `keep` steps up to the head (--session-snapshots). Rewinding to a step drops the steps after
// it; the next step is then numbered from there. A step run in place (the interpreter had
// threads) leaves no snapshot: its process now holds the new step, so the step it started from
// is gone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace engine {

class StepHistory {
 public:
  using Handle = std::uint64_t;
  // head_handle() of a history whose every state is gone.
  static constexpr Handle kNoHandle = ~Handle{0};

  explicit StepHistory(Handle root);
  // A copy continuing from `step` (a fork): the steps up to it, `step` the head. The caller has
  // checked has(step).
  StepHistory fork_at(std::uint64_t step) const;

  std::uint64_t head() const { return head_; }
  Handle head_handle() const;
  // Every state it held is gone (forget): there is nothing to continue from.
  bool empty() const { return steps_.empty(); }
  std::uint64_t next_step() const { return head_ + 1; }
  bool has(std::uint64_t step) const { return steps_.count(step) != 0; }
  std::optional<Handle> handle_of(std::uint64_t step) const;
  std::vector<std::uint64_t> kept() const;  // ascending
  std::vector<Handle> handles() const;      // each once
  bool holds(Handle handle) const;

  // A step from the head ended normally in a new process `handle`: it becomes the head. Returns
  // the handles retention drops (no longer in this history).
  std::vector<Handle> advance(Handle handle, std::size_t keep);
  // A step ran in the head's own process, which now holds the next step.
  void advance_in_place();

  struct Rewind {
    std::string error;             // non-empty: not possible, and why
    std::vector<Handle> released;  // the steps after it, dropped
  };
  Rewind rewind(std::uint64_t step);

  // The process `handle` is gone: its steps are forgotten (step 0's too); when the head was among
  // them, the latest step before it that is still kept becomes the head. Returns the new head
  // when it changed (nullopt too when none is left: then empty()).
  std::optional<std::uint64_t> forget(Handle handle);

  // "0, 3-7": the steps that can be rewound to.
  std::string describe() const;

 private:
  StepHistory() = default;

  std::map<std::uint64_t, Handle> steps_;
  std::uint64_t head_ = 0;
};

}  // namespace engine
