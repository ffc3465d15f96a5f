#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/zygote/protocol.h"
#include "tests/support/send_fds.h"

namespace z = engine::zygote;
using sandbox::UniqueFd;

namespace {

z::Message roundtrip(const z::Message& in) {
  const auto bytes = z::encode(in);
  z::Message out;
  std::string error;
  REQUIRE(z::decode(bytes, out, error));
  CHECK(error.empty());
  return out;
}

std::pair<UniqueFd, UniqueFd> seqpacket_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

ino_t inode_of(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("every message type survives encode/decode", "[zygote-protocol]") {
  SECTION("ready") {
    z::ReadyMessage m{"3.11.2", 12345678, 1, "preload foo failed"};
    const auto out = std::get<z::ReadyMessage>(roundtrip(m));
    CHECK(out.python_version == "3.11.2");
    CHECK(out.rss_bytes == 12345678);
    CHECK(out.tasks == 1);
    CHECK(out.warnings == "preload foo failed");
  }
  SECTION("run") {
    z::RunMessage m{0xFFFF'FFFF'0000'0001ull, 30, 7};
    const auto out = std::get<z::RunMessage>(roundtrip(m));
    CHECK(out.run_id == 0xFFFF'FFFF'0000'0001ull);
    CHECK(out.timeout_seconds == 30);
    CHECK(out.flags == 7);
  }
  SECTION("started") {
    const auto out = std::get<z::StartedMessage>(roundtrip(z::StartedMessage{42, 4242}));
    CHECK(out.run_id == 42);
    CHECK(out.pid == 4242);
  }
  SECTION("exited") {
    z::ExitedMessage m;
    m.run_id = 9;
    m.wait_status = 9;  // killed by SIGKILL
    m.user_cpu_us = -1;
    m.system_cpu_us = 1234567;
    m.max_rss_kb = 65536;
    m.flags = z::kExitSetupFailed;
    m.zygote_rss_bytes = 1ull << 40;
    m.detail = "mount /proc: Operation not permitted";
    const auto out = std::get<z::ExitedMessage>(roundtrip(m));
    CHECK(out.run_id == 9);
    CHECK(out.wait_status == 9);
    CHECK(out.user_cpu_us == -1);
    CHECK(out.system_cpu_us == 1234567);
    CHECK(out.max_rss_kb == 65536);
    CHECK(out.flags == z::kExitSetupFailed);
    CHECK(out.zygote_rss_bytes == 1ull << 40);
    CHECK(out.detail == m.detail);
  }
  SECTION("refused") {
    const auto out = std::get<z::RefusedMessage>(roundtrip(z::RefusedMessage{3, "3 threads"}));
    CHECK(out.run_id == 3);
    CHECK(out.reason == "3 threads");
  }
  SECTION("step") {
    z::StepMessage m{1ull << 50, 17, 30, z::kStepInPlace | z::kStepFiles};
    const auto out = std::get<z::StepMessage>(roundtrip(m));
    CHECK(out.step_id == 1ull << 50);
    CHECK(out.step_number == 17);
    CHECK(out.cpu_seconds == 30);
    CHECK(out.flags == (z::kStepInPlace | z::kStepFiles));
  }
  SECTION("step started") {
    const auto out = std::get<z::StepStartedMessage>(roundtrip(z::StepStartedMessage{5, 12}));
    CHECK(out.step_id == 5);
    CHECK(out.pid == 12);
  }
  SECTION("step exited") {
    const auto out = std::get<z::StepExitedMessage>(roundtrip(z::StepExitedMessage{6, 9, 100, 200, 300, 41}));
    CHECK(out.step_id == 6);
    CHECK(out.wait_status == 9);
    CHECK(out.user_cpu_us == 100);
    CHECK(out.system_cpu_us == 200);
    CHECK(out.max_rss_kb == 300);
    CHECK(out.pid == 41);
  }
  SECTION("holder spare") {
    const auto out = std::get<z::HolderSpareMessage>(roundtrip(z::HolderSpareMessage{33, 2}));
    CHECK(out.pid == 33);
    CHECK(out.generation == 2);
  }
  SECTION("holder ready") {
    const auto out = std::get<z::HolderReadyMessage>(roundtrip(z::HolderReadyMessage{7, -2, 3, 1, 2, 4}));
    CHECK(out.step_id == 7);
    CHECK(out.exit_code == -2);
    CHECK(out.tasks == 3);
    CHECK(out.user_cpu_us == 1);
    CHECK(out.system_cpu_us == 2);
    CHECK(out.max_rss_kb == 4);
  }
  SECTION("prepare") {
    CHECK(std::holds_alternative<z::PrepareMessage>(roundtrip(z::PrepareMessage{})));
  }
  SECTION("spare") {
    CHECK(std::get<z::SpareMessage>(roundtrip(z::SpareMessage{77})).pid == 77);
    const auto direct = std::get<z::SpareMessage>(roundtrip(z::SpareMessage{78, 1}));
    CHECK(direct.pid == 78);
    CHECK(direct.direct == 1);
  }
  SECTION("taken") {
    const auto out = std::get<z::TakenMessage>(roundtrip(z::TakenMessage{12345678901ULL, 42}));
    CHECK(out.run_id == 12345678901ULL);
    CHECK(out.pid == 42);
  }
  SECTION("spare linked") {
    const auto ok = std::get<z::SpareLinkedMessage>(roundtrip(z::SpareLinkedMessage{8, 1, ""}));
    CHECK(ok.pid == 8);
    CHECK(ok.ok == 1);
    const auto failed = std::get<z::SpareLinkedMessage>(roundtrip(z::SpareLinkedMessage{9, 0, "no veth"}));
    CHECK(failed.pid == 9);
    CHECK(failed.ok == 0);
    CHECK(failed.reason == "no veth");
  }
}

TEST_CASE("the fds a run or a step carries depend on its flags", "[zygote-protocol]") {
  CHECK(z::RunMessage::fixed_fds(z::kRunFlagNone) == 4);
  CHECK(z::RunMessage::fixed_fds(z::kRunFlagFiles) == 5);
  CHECK(z::RunMessage::fixed_fds(z::kRunFlagSession) == 1);
  CHECK(z::StepMessage::fd_count(0) == 5);  // script, stdout, stderr, result, child socket
  CHECK(z::StepMessage::fd_count(z::kStepFiles) == 6);
  CHECK(z::StepMessage::fd_count(z::kStepInPlace) == 4);
  CHECK(z::StepMessage::fd_count(z::kStepInPlace | z::kStepFiles) == 5);
}

TEST_CASE("long strings are cut at a UTF-8 boundary and stay within the message limit",
          "[zygote-protocol]") {
  std::string detail;
  while (detail.size() < 5000) detail += "世";
  z::ExitedMessage m;
  m.detail = detail;
  const auto bytes = z::encode(m);
  CHECK(bytes.size() <= z::kMaxMessageBytes);
  const auto out = std::get<z::ExitedMessage>(roundtrip(m));
  CHECK(!out.detail.empty());
  CHECK(out.detail.size() % 3 == 0);
  CHECK(detail.compare(0, out.detail.size(), out.detail) == 0);
}

TEST_CASE("malformed messages are rejected with a reason", "[zygote-protocol]") {
  z::Message out;
  std::string error;
  const auto good = z::encode(z::RunMessage{1, 2, 3});

  SECTION("empty") {
    CHECK_FALSE(z::decode({}, out, error));
    CHECK(error.find("header") != std::string::npos);
  }
  SECTION("bad magic") {
    auto bytes = good;
    bytes[0] ^= 0xFF;
    CHECK_FALSE(z::decode(bytes, out, error));
    CHECK(error.find("magic") != std::string::npos);
  }
  SECTION("unknown type") {
    auto bytes = good;
    bytes[4] = 99;
    CHECK_FALSE(z::decode(bytes, out, error));
    CHECK(error.find("unknown message type 99") != std::string::npos);
  }
  SECTION("every truncation") {
    for (std::size_t n = 8; n < good.size(); ++n) {
      std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
      CHECK_FALSE(z::decode(cut, out, error));
    }
  }
  SECTION("trailing bytes") {
    auto bytes = good;
    bytes.push_back(0);
    CHECK_FALSE(z::decode(bytes, out, error));
    CHECK(error.find("trailing") != std::string::npos);
  }
  SECTION("string length beyond the payload") {
    auto bytes = z::encode(z::RefusedMessage{1, "abc"});
    bytes[16] = 0xFF;  // length field of `reason`
    CHECK_FALSE(z::decode(bytes, out, error));
  }
}

TEST_CASE("messages and fds cross a SEQPACKET socketpair", "[zygote-protocol]") {
  auto [a, b] = seqpacket_pair();
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  UniqueFd rd(p[0]), wr(p[1]);

  SECTION("a run with its fds") {
    const int fds[] = {rd.get(), wr.get(), wr.get()};
    REQUIRE(z::send_message(a.get(), z::RunMessage{77, 5, 0}, fds) == 0);
    auto got = z::receive_message(b.get());
    REQUIRE(got.status == z::Received::Status::message);
    CHECK(std::get<z::RunMessage>(got.message).run_id == 77);
    REQUIRE(got.fds.size() == 3);
    CHECK(inode_of(got.fds[0].get()) == inode_of(rd.get()));
    CHECK(inode_of(got.fds[1].get()) == inode_of(wr.get()));
    // Received fds are close-on-exec and usable: write through the received end.
    CHECK((::fcntl(got.fds[1].get(), F_GETFD) & FD_CLOEXEC) != 0);
    REQUIRE(::write(got.fds[1].get(), "x", 1) == 1);
    char c = 0;
    REQUIRE(::read(rd.get(), &c, 1) == 1);
    CHECK(c == 'x');
  }
  SECTION("message boundaries are kept") {
    REQUIRE(z::send_message(a.get(), z::StartedMessage{1, 10}) == 0);
    REQUIRE(z::send_message(a.get(), z::StartedMessage{2, 20}) == 0);
    CHECK(std::get<z::StartedMessage>(z::receive_message(b.get()).message).run_id == 1);
    CHECK(std::get<z::StartedMessage>(z::receive_message(b.get()).message).run_id == 2);
  }
  SECTION("nothing pending is would_block, a closed peer is eof") {
    CHECK(z::receive_message(b.get()).status == z::Received::Status::would_block);
    a.reset();
    CHECK(z::receive_message(b.get()).status == z::Received::Status::eof);
  }
  SECTION("garbage is an error and its fds are closed, not leaked") {
    const char junk[] = "not a message";
    iovec iov{const_cast<char*>(junk), sizeof junk};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    REQUIRE(::sendmsg(a.get(), &msg, 0) > 0);
    auto got = z::receive_message(b.get());
    CHECK(got.status == z::Received::Status::error);
    CHECK(got.fds.empty());
    CHECK(got.error.find("magic") != std::string::npos);
  }
  SECTION("a message whose fds could not all be received is still whole, and says so") {
    // More fds than a message may carry: the kernel drops the rest (as it does when the
    // receiver is out of fds), and the receiver must still learn what the message was.
    const auto bytes = z::encode(z::SpareMessage{42, 1});
    const std::vector<int> fds(z::kMaxFdsPerMessage + 2, rd.get());
    REQUIRE(test_support::send_with_fds(a.get(), bytes.data(), bytes.size(), fds) > 0);
    auto got = z::receive_message(b.get());
    REQUIRE(got.status == z::Received::Status::message);
    CHECK(std::get<z::SpareMessage>(got.message).pid == 42);
    CHECK(got.fds_truncated);
    CHECK(got.fds.size() <= z::kMaxFdsPerMessage);
  }
  SECTION("a whole message is not marked truncated") {
    const int fds[] = {rd.get()};
    REQUIRE(z::send_message(a.get(), z::SpareMessage{7, 0}, fds) == 0);
    auto got = z::receive_message(b.get());
    REQUIRE(got.status == z::Received::Status::message);
    CHECK_FALSE(got.fds_truncated);
    CHECK(got.fds.size() == 1);
  }
  SECTION("sending to a closed peer reports EPIPE without SIGPIPE") {
    b.reset();
    CHECK(z::send_message(a.get(), z::StartedMessage{1, 1}) == EPIPE);
  }
}

TEST_CASE("send_message_now never waits, whatever the socket's flags: a full buffer is EAGAIN",
          "[zygote-protocol]") {
  // A session's process may stop reading its socket, or hand the server one whose O_NONBLOCK
  // it clears from its own copy: the server's event loop must not block on it.
  auto [ours, theirs] = seqpacket_pair();
  REQUIRE((::fcntl(ours.get(), F_GETFL) & O_NONBLOCK) == 0);  // a blocking socket
  int err = 0;
  int sent = 0;
  for (; sent < 100000; ++sent) {
    err = z::send_message_now(ours.get(), z::PrepareMessage{});
    if (err != 0) break;
  }
  CHECK(err == EAGAIN);
  CHECK(sent > 0);
  // Once read, it sends again.
  REQUIRE(z::receive_message(theirs.get()).status == z::Received::Status::message);
  CHECK(z::send_message_now(ours.get(), z::PrepareMessage{}) == 0);
}
