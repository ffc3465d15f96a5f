#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

#include "sandbox/read_file.h"
#include "sandbox/user_quotas.h"
#include "tests/support/sandbox_fork.h"

using test_support::ChildResult;
using test_support::run_in_child;

TEST_CASE("each sandbox gets a share of half of the host user's pools, at least one", "[user_quotas]") {
  const sandbox::UserQuotaPools pools{128, 192540, 96367};
  const auto twelve = sandbox::share_user_quotas(pools, 12);
  CHECK(twelve.inotify_instances == 5);  // 64 / 12
  CHECK(twelve.inotify_watches == 8022);
  CHECK(twelve.pending_signals == 4015);
  CHECK(twelve.inotify_instances * 12 <= 64);
  // More sandboxes than half the pool: one each, never none.
  CHECK(sandbox::share_user_quotas(pools, 500).inotify_instances == 1);
  // A pool not known (or zero) is left to the kernel.
  const auto unknown = sandbox::share_user_quotas({std::nullopt, 0, std::nullopt}, 12);
  CHECK(unknown.inotify_instances == 0);
  CHECK(unknown.inotify_watches == 0);
  CHECK(unknown.pending_signals == 0);
  CHECK(sandbox::share_user_quotas(pools, 0).inotify_instances == 64);
  CHECK_THAT(sandbox::describe_user_quotas(twelve, pools, 12),
             Catch::Contains("5 inotify instances (of the host user's 128)") && Catch::Contains("12 sandboxes"));
}

TEST_CASE("the host user's pools are read from procfs", "[user_quotas]") {
  const auto pools = sandbox::read_user_quota_pools();
  const auto host = sandbox::read_file("/proc/sys/fs/inotify/max_user_instances");
  REQUIRE(host);
  REQUIRE(pools.inotify_instances);
  CHECK(*pools.inotify_instances <= std::stoull(*host));
  CHECK(pools.inotify_watches);
}

TEST_CASE("apply_user_quotas bounds the user namespace it runs in, and only that one", "[user_quotas]") {
  const std::string before = sandbox::read_file("/proc/sys/user/max_inotify_instances").value_or("?");
  ChildResult r = run_in_child([] {
    if (::unshare(CLONE_NEWUSER) != 0) {
      test_support::report("unshare(CLONE_NEWUSER) not permitted here");
      return 50;
    }
    sandbox::apply_user_quotas({3, 10, 7});
    rlimit pending{};
    if (::getrlimit(RLIMIT_SIGPENDING, &pending) != 0 || pending.rlim_cur != 7 || pending.rlim_max != 7) return 2;
    int got = 0;
    while (got < 10 && ::inotify_init1(IN_CLOEXEC) >= 0) ++got;
    test_support::report("instances " + std::to_string(got) + " errno " + std::to_string(errno));
    return got == 3 && errno == EMFILE ? 0 : 1;
  });
  if (r.exited(50)) {
    WARN("user namespaces unavailable: " << r.report);
    return;
  }
  INFO(r.describe());
  CHECK(r.exited(0));
  CHECK(sandbox::read_file("/proc/sys/user/max_inotify_instances").value_or("?") == before);
}
