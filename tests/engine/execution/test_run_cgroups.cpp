// Run cgroups made ahead (engine/execution/run_cgroups.h), on this host's real hierarchies (root
// needed; skipped with a warning otherwise): a take finds one ready once the worker made it, each
// take is a fresh cgroup with the limits and its join files opened, a burst makes its own, and
// stop() removes what is ready.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <set>
#include <string>

#include "engine/execution/run_cgroups.h"
#include "sandbox/cgroup.h"

namespace {

std::string tag() { return "mpes-test-pool-" + std::to_string(::getpid()); }

bool dir_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Waits (bounded) until the worker has nothing left to do.
void drain(asio::thread_pool& worker) {
  std::promise<void> done;
  asio::post(worker, [&] { done.set_value(); });
  done.get_future().wait_for(std::chrono::seconds(10));
}

}  // namespace

TEST_CASE("run cgroups are made ahead on the worker, fresh for each run, and removed at stop", "[cgroup][pool]") {
  const sandbox::CgroupSetup setup = sandbox::prepare_cgroups(sandbox::find_cgroup_hierarchies(), tag());
  struct Release {
    const sandbox::CgroupSetup& s;
    ~Release() { sandbox::release_cgroups(s); }
  } release{setup};
  if (::geteuid() != 0 || !setup.limits_memory() || !setup.limits_processes()) {
    WARN("no writable memory+pids cgroups here (" << setup.note << ")");
    return;
  }
  sandbox::Limits limits;
  limits.max_processes = 7;
  asio::thread_pool worker(1);
  {
    engine::RunCgroups pool(setup, limits, worker.get_executor(), 2);
    REQUIRE(pool.enabled());
    // Nothing is ready before the first take: it makes its own, and the worker then makes two.
    engine::RunCgroups::Prepared first = pool.take();
    CHECK(pool.taken_ready() == 0);
    drain(worker);
    std::set<std::string> dirs{first.cgroup.dirs().begin(), first.cgroup.dirs().end()};
    for (int i = 0; i < 2; ++i) {
      engine::RunCgroups::Prepared p = pool.take();
      for (const auto& d : p.cgroup.dirs()) {
        CHECK(dirs.insert(d).second);  // a cgroup of its own
        CHECK(dir_exists(d));
      }
      CHECK(p.join.fds().size() == p.cgroup.dirs().size());
      std::string pids_max;
      for (const auto& d : p.cgroup.dirs()) {
        if (d.find("/pids/") != std::string::npos || setup.version == sandbox::CgroupVersion::v2) {
          std::ifstream in(d + "/pids.max");
          std::getline(in, pids_max);
        }
      }
      CHECK(pids_max == "7");
    }
    CHECK(pool.taken_ready() == 2);
    drain(worker);
    // stop() removes the ready ones (made after the last takes) and makes no more.
    std::set<std::string> before_stop;
    for (const auto& parent : {setup.memory_parent, setup.pids_parent}) {
      for (int n = 0; n < 10; ++n) {
        const std::string d = parent + "/run-" + std::to_string(n);
        if (dir_exists(d)) before_stop.insert(d);
      }
    }
    CHECK(!before_stop.empty());
    asio::post(worker, [&] { pool.stop(); });
    drain(worker);
    for (const auto& d : before_stop) {
      if (dirs.count(d) == 0) CHECK_FALSE(dir_exists(d));
    }
    (void)pool.take();  // made at once after stop (a run still gets its cgroup), none ahead
    drain(worker);
    CHECK(pool.taken_ready() == 2);
  }
  worker.join();
}
