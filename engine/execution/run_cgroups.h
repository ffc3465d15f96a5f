// Run cgroups made before the runs that will use them.
//
// A run's control groups (sandbox/cgroup.h) are a mkdir per controller, a limit file or three
// written and the join files opened: a dozen filesystem calls, two of them kernfs mkdirs (~0.1 ms
// each here). Made when a call arrives, they sat on its critical path.
// This keeps `ahead` of them ready, made on the cgroup worker thread (the one that also removes
// runs' cgroups, in order) and refilled after each take; a run that finds none ready (a burst
// larger than `ahead`) makes its own at once, exactly as before. Every run still gets a fresh
// cgroup of its own: nothing of one run's accounting is seen by another.
//
// take() runs on the event loop; the refill on the worker; the ready list is shared under a
// mutex. stop() (at shutdown, on the worker, before the server's parent cgroups go) removes the
// ready ones and refills no more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "engine/event_loop.h"
#include "sandbox/cgroup.h"
#include "sandbox/policy.h"

namespace engine {

class RunCgroups {
 public:
  // One run's cgroup(s) with the join fds that travel with the run. (Its counter files are
  // opened by the run once it has been sent, not held here: a server near its fd limit would
  // spend 7 fds per ready cgroup on them.)
  struct Prepared {
    sandbox::RunCgroup cgroup;
    sandbox::JoinFds join;
  };

  // `setup` must outlive this and be complete before the first take() (the server's cgroups are
  // prepared at start-up, before any run).
  RunCgroups(const sandbox::CgroupSetup& setup, sandbox::Limits limits, asio::any_io_executor worker,
             std::size_t ahead);

  // Whether runs get cgroups at all (a memory or process limit enforced by cgroups).
  bool enabled() const;
  // A ready run cgroup, else one made now. Throws SetupError (made now and failing).
  Prepared take();
  // At shutdown, on the worker: removes what is ready; nothing is made afterwards.
  void stop();

  // How many takes found one ready (for tests and the log).
  std::uint64_t taken_ready() const;

 private:
  struct Shared {
    std::mutex mutex;
    std::deque<Prepared> ready;
    std::size_t coming = 0;  // refills posted and not yet done
    bool stopped = false;
    std::uint64_t taken_ready = 0;
    std::uint64_t next_name = 0;
  };
  static Prepared make(const sandbox::CgroupSetup& setup, const sandbox::Limits& limits, std::uint64_t n);
  void refill();

  const sandbox::CgroupSetup& setup_;
  sandbox::Limits limits_;
  asio::any_io_executor worker_;
  std::size_t ahead_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace engine
