// A session's sandbox keeps track of the links to the processes holding its states; a long
// session lets go of thousands of them, and what it keeps of them must not grow with its steps.
#include "engine/event_loop.h"  // first: see there

#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <memory>
#include <vector>

#include "engine/sessions/session_sandbox.h"
#include "sandbox/unique_fd.h"

using sandbox::UniqueFd;

TEST_CASE("a session's sandbox forgets the links its sessions let go of", "[sessions]") {
  asio::io_context io;
  auto box = std::make_shared<engine::SessionSandbox>(io, 1, engine::Interpreter{}, std::vector<std::string>{},
                                                      nullptr, engine::SessionSandbox::Config{});
  std::vector<UniqueFd> peers;  // the holders' ends: open, so that no link sees EOF
  std::vector<std::shared_ptr<engine::HolderLink>> kept;
  for (std::uint64_t step = 1; step <= 1000; ++step) {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    peers.emplace_back(sv[1]);
    auto link = box->add_holder(step, UniqueFd(sv[0]));
    // As a session with --session-snapshots 8 does: the newest links stay, older ones are let go.
    kept.push_back(link);
    if (kept.size() > 8) {
      kept.front()->release();
      kept.erase(kept.begin());
    }
    if (step % 100 == 0) peers.clear();  // (in batches: the fd limit)
  }
  CHECK(box->links() <= kept.size() + 1);
  kept.clear();
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  UniqueFd peer(sv[1]);
  auto last = box->add_holder(1001, UniqueFd(sv[0]));
  CHECK(box->links() == 1);
  box->close("test");
  CHECK(box->links() == 0);
}
