#include "engine/execution/run_cgroups.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace engine {

RunCgroups::RunCgroups(const sandbox::CgroupSetup& setup, sandbox::Limits limits, asio::any_io_executor worker,
                       std::size_t ahead)
    : setup_(setup), limits_(limits), worker_(std::move(worker)), ahead_(ahead) {}

bool RunCgroups::enabled() const { return setup_.limits_memory() || setup_.limits_processes(); }

RunCgroups::Prepared RunCgroups::make(const sandbox::CgroupSetup& setup, const sandbox::Limits& limits,
                                      std::uint64_t n) {
  Prepared p;
  p.cgroup = sandbox::RunCgroup::create(setup, "run-" + std::to_string(n), limits);
  p.join = p.cgroup.open_join_fds();
  p.cgroup.close_dirs();  // no fd held while it waits; the run opens its counter files by path
  return p;
}

RunCgroups::Prepared RunCgroups::take() {
  std::uint64_t name = 0;
  {
    std::lock_guard lock(shared_->mutex);
    if (!shared_->ready.empty()) {
      Prepared p = std::move(shared_->ready.front());
      shared_->ready.pop_front();
      ++shared_->taken_ready;
      refill();
      return p;
    }
    name = shared_->next_name++;
  }
  Prepared p = make(setup_, limits_, name);  // none ready: made now, as without this pool
  std::lock_guard lock(shared_->mutex);
  refill();
  return p;
}

// With the mutex held: posts as many makes as keep `ahead_` ready or coming.
void RunCgroups::refill() {
  while (!shared_->stopped && shared_->ready.size() + shared_->coming < ahead_) {
    ++shared_->coming;
    const std::uint64_t name = shared_->next_name++;
    asio::post(worker_, [shared = shared_, setup = setup_, limits = limits_, name] {
      std::optional<Prepared> made;
      try {
        made = make(setup, limits, name);
      } catch (const std::exception& e) {
        // The run that takes the next one makes its own and reports the failure.
        spdlog::warn("cannot make a run cgroup ahead: {}", e.what());
      }
      std::lock_guard lock(shared->mutex);
      --shared->coming;
      if (made && !shared->stopped) shared->ready.push_back(std::move(*made));
      // else: `made` is destroyed here, which removes its directories.
    });
  }
}

void RunCgroups::stop() {
  std::deque<Prepared> ready;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopped = true;
    ready.swap(shared_->ready);
  }
  // Destroying them removes their (empty) directories.
}

std::uint64_t RunCgroups::taken_ready() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->taken_ready;
}

}  // namespace engine
