// What a session's spare copies ahead of its step: the pages its holder wrote alone, read from
// /proc/self/pagemap (or a child's, through /proc/PID), and the copies taken with
// MADV_POPULATE_WRITE in a forked child.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/zygote/written_pages.h"

using engine::zygote::exclusive_runs;
using engine::zygote::kPageExclusive;
using engine::zygote::kPagePresent;
using engine::zygote::PageRange;

namespace {

constexpr std::uint64_t kMine = kPagePresent | kPageExclusive;
constexpr std::size_t kPage = 4096;

// How many of the `pages` pages at `at` this process holds alone, or -1 when pagemap says nothing.
int exclusive_pages(const void* at, std::size_t pages) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::vector<std::uint64_t> entries(pages);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const ssize_t got = ::pread(fd, entries.data(), pages * 8, static_cast<off_t>(reinterpret_cast<std::uintptr_t>(at) / page * 8));
  ::close(fd);
  if (got != static_cast<ssize_t>(pages * 8)) return -1;
  int n = 0;
  for (const auto e : entries) n += (e & kMine) == kMine ? 1 : 0;
  return n;
}

// An anonymous private mapping of `count` pages, each byte set by `fill(i)`, unmapped at scope
// exit; `readable` says whether /proc/self/pagemap reports on it here.
struct Written {
  Written(std::size_t count, unsigned char (*fill)(std::size_t))
      : pages(count),
        bytes(count * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
        at(static_cast<unsigned char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    if (at == MAP_FAILED) return;
    for (std::size_t i = 0; i < bytes; ++i) at[i] = fill(i);
    readable = exclusive_pages(at, pages) >= 0;
    if (!readable) WARN("/proc/self/pagemap is not readable here: not tested");
  }
  ~Written() {
    if (at != MAP_FAILED) ::munmap(at, bytes);
  }
  Written(const Written&) = delete;
  Written& operator=(const Written&) = delete;
  bool mapped() const { return at != MAP_FAILED; }
  std::uintptr_t start() const { return reinterpret_cast<std::uintptr_t>(at); }

  std::size_t pages;
  std::size_t bytes;
  unsigned char* at;
  bool readable = false;
};

}  // namespace

TEST_CASE("exclusive_runs keeps the runs of present pages held alone, within the budget", "[zygote]") {
  const std::vector<std::uint64_t> entries = {kMine, kMine, kPagePresent, 0, kMine, kPageExclusive, kMine};
  std::vector<PageRange> out;
  CHECK(exclusive_runs(0x10000, entries, kPage, 1 << 20, out) == (1 << 20) - 4 * kPage);
  CHECK(out == std::vector<PageRange>{{0x10000, 2 * kPage}, {0x10000 + 4 * kPage, kPage}, {0x10000 + 6 * kPage, kPage}});

  out.clear();  // the budget ends inside the first run
  CHECK(exclusive_runs(0x10000, entries, kPage, 1 * kPage + 100, out) == 100);
  CHECK(out == std::vector<PageRange>{{0x10000, kPage}});

  out.clear();  // a mapping that continues the previous one extends its last run
  exclusive_runs(0x10000, std::vector<std::uint64_t>{kPagePresent, kMine}, kPage, 1 << 20, out);
  exclusive_runs(0x10000 + 2 * kPage, std::vector<std::uint64_t>{kMine}, kPage, 1 << 20, out);
  CHECK(out == std::vector<PageRange>{{0x10000 + kPage, 2 * kPage}});

  out.clear();
  CHECK(exclusive_runs(0x10000, std::vector<std::uint64_t>{0, kPagePresent}, kPage, 1 << 20, out) == 1 << 20);
  CHECK(out.empty());
}

TEST_CASE("a forked child takes its own copies of the pages its parent wrote, contents unchanged", "[zygote]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kPages = 16;
  const Written written_here(kPages, [](std::size_t i) { return static_cast<unsigned char>(i * 7 + 3); });
  REQUIRE(written_here.mapped());
  if (!written_here.readable) return;
  unsigned char* const region = written_here.at;
  REQUIRE(exclusive_pages(region, kPages) == static_cast<int>(kPages));

  // The parent finds them among the pages it wrote.
  const auto written = engine::zygote::pages_written_here(std::size_t{1} << 30);
  const auto start = reinterpret_cast<std::uintptr_t>(region);
  bool covered = false;
  for (const auto& r : written) covered |= r.start <= start && start + kPages * page <= r.start + r.bytes;
  CHECK(covered);

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Shared with the parent after the fork; an interrupted copy takes nothing.
    int code = exclusive_pages(region, kPages) == 0 ? 0 : 1;
    const std::vector<PageRange> mine = {{start, kPages * page}};
    if (engine::zygote::take_copies(mine, 4 * page, [] { return true; }) != 0) code |= 2;
    if (exclusive_pages(region, kPages) != 0) code |= 4;
    const std::size_t done = engine::zygote::take_copies(mine, 4 * page, [] { return false; });
    if (done == 0 && ::madvise(region, page, 23 /* MADV_POPULATE_WRITE */) != 0 && errno == EINVAL) {
      ::_exit(100);  // a kernel without MADV_POPULATE_WRITE (Linux 5.14)
    }
    if (done != kPages * page || exclusive_pages(region, kPages) != static_cast<int>(kPages)) code |= 8;
    for (std::size_t i = 0; i < kPages * page; ++i) {
      if (region[i] != static_cast<unsigned char>(i * 7 + 3)) code |= 16;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100) {
    WARN("MADV_POPULATE_WRITE is not supported by this kernel: copies not tested");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a reservation larger than any heap is passed over, and what was written beside it is found", "[zygote]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kReserved = std::size_t{64} << 30;  // 64 GiB of address space, nothing behind it
  auto* reserved = static_cast<unsigned char*>(::mmap(nullptr, kReserved, PROT_READ | PROT_WRITE,
                                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (reserved == MAP_FAILED) {
    WARN("a 64 GiB MAP_NORESERVE mapping is refused here: not tested");
    return;
  }
  reserved[kReserved / 2] = 1;  // one page of it written
  constexpr std::size_t kPages = 8;
  auto* small = static_cast<unsigned char*>(
      ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(small != MAP_FAILED);
  std::memset(small, 7, kPages * page);
  if (exclusive_pages(small, kPages) < 0) {
    ::munmap(small, kPages * page);
    ::munmap(reserved, kReserved);
    WARN("/proc/self/pagemap is not readable here: not tested");
    return;
  }

  const auto written = engine::zygote::pages_written_here(std::size_t{1} << 30);
  const auto small_at = reinterpret_cast<std::uintptr_t>(small);
  const auto reserved_at = reinterpret_cast<std::uintptr_t>(reserved);
  bool small_found = false;
  bool reserved_found = false;
  for (const auto& r : written) {
    small_found |= r.start <= small_at && small_at + kPages * page <= r.start + r.bytes;
    reserved_found |= r.start < reserved_at + kReserved && reserved_at < r.start + r.bytes;
  }
  ::munmap(small, kPages * page);
  ::munmap(reserved, kReserved);
  CHECK(small_found);
  CHECK_FALSE(reserved_found);
}

TEST_CASE("the pages a waiting child wrote after its fork are read through /proc/PID, and not the others", "[zygote]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kPages = 32;
  // Present, and shared with the child after the fork.
  const Written shared(kPages, [](std::size_t) { return static_cast<unsigned char>(1); });
  REQUIRE(shared.mapped());
  if (!shared.readable) return;
  unsigned char* const region = shared.at;
  int written[2], hold[2];
  REQUIRE(::pipe2(written, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(hold, O_CLOEXEC) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(hold[1]);
    ::close(written[0]);
    for (std::size_t i = 8; i < 12; ++i) region[i * page] = 2;  // its own copies of pages 8-11
    // And a mapping of its own, at an address where this process (the parent) has nothing.
    void* own = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own != MAP_FAILED) std::memset(own, 3, 4 * page);
    const auto at = own == MAP_FAILED ? std::uintptr_t{0} : reinterpret_cast<std::uintptr_t>(own);
    [[maybe_unused]] ssize_t n = ::write(written[1], &at, sizeof at);
    char byte;
    n = ::read(hold[0], &byte, 1);  // until the parent has looked
    ::_exit(0);
  }
  ::close(written[1]);
  ::close(hold[0]);
  std::uintptr_t own = 0;
  REQUIRE(::read(written[0], &own, sizeof own) == static_cast<ssize_t>(sizeof own));
  const auto theirs = engine::zygote::pages_written_by(child, std::size_t{1} << 30);
  ::close(hold[1]);
  ::close(written[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const auto found = [&](std::uintptr_t at) {
    return std::any_of(theirs.begin(), theirs.end(), [at](const PageRange& r) { return r.start <= at && at < r.start + r.bytes; });
  };
  const auto start = reinterpret_cast<std::uintptr_t>(region);
  for (std::size_t i = 0; i < kPages; ++i) {
    INFO("page " << i);
    CHECK(found(start + i * page) == (i >= 8 && i < 12));
  }
  REQUIRE(own != 0);
  for (std::size_t i = 0; i < 4; ++i) CHECK(found(own + i * page));
  CHECK(engine::zygote::pages_written_by(999999999, 1 << 20).empty());  // no such process
}
