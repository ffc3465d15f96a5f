#include "bench/floor/page_touch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/floor/measure.h"
#include "sandbox/unique_fd.h"

namespace floor_bench {
namespace {

using sandbox::UniqueFd;

[[noreturn]] void fail(const std::string& what) { floor_bench::fail("page-touch", what); }

// An anonymous private region of 4 KiB pages (no transparent huge pages: a process's heap and
// stacks are mostly small pages, and one huge page would hide 511 faults).
class Region {
 public:
  Region(std::size_t pages, std::size_t page_size) : size_(pages * page_size) {
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap");
    base_ = static_cast<volatile char*>(p);
    ::madvise(p, size_, MADV_NOHUGEPAGE);
  }
  ~Region() { ::munmap(const_cast<char*>(base_), size_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  volatile char* base() const { return base_; }

 private:
  std::size_t size_;
  volatile char* base_ = nullptr;
};

struct Pass {
  std::size_t pages;
  std::size_t page_size;
  // ns to write (or read) one byte of every page.
  std::int64_t write(volatile char* base, char value) const {
    const std::int64_t t0 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) base[i * page_size] = value;
    return now_ns() - t0;
  }
  std::int64_t read(volatile char* base) const {
    const std::int64_t t0 = now_ns();
    for (std::size_t i = 0; i < pages; ++i) (void)base[i * page_size];  // volatile: each read happens
    return now_ns() - t0;
  }
};

struct ForkedTimes {
  std::int64_t fork_ns = 0;
  std::int64_t first_ns = 0;   // the child's first pass over the inherited pages
  std::int64_t second_ns = 0;  // the same pass again
};

// Populates a region, forks, and times in the child a write (copy-on-write) or read pass over
// every inherited page, then the same pass again.
ForkedTimes after_fork(const Pass& pass, bool write) {
  Region region(pass.pages, pass.page_size);
  pass.write(region.base(), 1);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) fail("pipe");
  UniqueFd rd(p[0]), wr(p[1]);
  ForkedTimes times;
  const std::int64_t t0 = now_ns();
  const pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    ForkedTimes child;
    child.first_ns = write ? pass.write(region.base(), 2) : pass.read(region.base());
    child.second_ns = write ? pass.write(region.base(), 3) : pass.read(region.base());
    [[maybe_unused]] const ssize_t n = ::write(wr.get(), &child, sizeof child);
    ::_exit(0);
  }
  times.fork_ns = now_ns() - t0;
  wr.reset();
  ForkedTimes child;
  const ssize_t n = ::read(rd.get(), &child, sizeof child);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof child)) throw std::runtime_error("page-touch: the forked child reported nothing");
  times.first_ns = child.first_ns;
  times.second_ns = child.second_ns;
  return times;
}

}  // namespace

nlohmann::json measure_page_touch(std::size_t pages, int repeat) {
  const auto page_size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const Pass pass{pages, page_size};
  const double per_page_us = 1e-3 / static_cast<double>(pages);
  std::vector<double> fresh, cow, cow_again, first_read, read_again, fork_us;
  for (int r = 0; r < repeat; ++r) {
    {
      Region region(pages, page_size);
      fresh.push_back(static_cast<double>(pass.write(region.base(), 1)) * per_page_us);
    }
    const ForkedTimes w = after_fork(pass, true);
    cow.push_back(static_cast<double>(w.first_ns) * per_page_us);
    cow_again.push_back(static_cast<double>(w.second_ns) * per_page_us);
    fork_us.push_back(static_cast<double>(w.fork_ns) / 1e3);
    const ForkedTimes rd = after_fork(pass, false);
    first_read.push_back(static_cast<double>(rd.first_ns) * per_page_us);
    read_again.push_back(static_cast<double>(rd.second_ns) * per_page_us);
    fork_us.push_back(static_cast<double>(rd.fork_ns) / 1e3);
  }
  return {{"page_size", page_size},
          {"pages", pages},
          {"repeat", repeat},
          {"fresh_page_us", median(fresh)},
          {"cow_fault_us", median(cow)},
          {"write_again_us", median(cow_again)},
          {"first_read_after_fork_us", median(first_read)},
          {"read_again_us", median(read_again)},
          // fork() of this process holding `pages` populated pages, until it returns in the parent.
          {"fork_us", median(fork_us)}};
}

}  // namespace floor_bench
