// The pages a session's process has written itself, so that the spare it forks can take its own
// copies of them ahead of its step. After a fork, parent and child share every page until one of
// them writes it; the write then stops for a page fault that copies the page (a few µs each on a
// machine where page faults are dear). A step writes much the same pages as the step before it
// (the interpreter's own state, the allocator's arenas, the runner's frames), and those are the
// pages the process holding the last step's state has private: /proc/self/pagemap says so of
// each page ("exclusively mapped", bit 56, Linux 4.2). The spare faults them in before its step
// arrives (MADV_POPULATE_WRITE, Linux 5.14), in slices, so that a step arriving meanwhile waits
// for one slice at most. Where either interface is missing, nothing is done: the step pays the
// faults itself, as before. Runs use the same two halves: the zygote reads the pages its own
// rehearsal run wrote (pages_written_by, through /proc/PID), and each spare copies them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace engine::zygote {

struct PageRange {
  std::uintptr_t start = 0;
  std::size_t bytes = 0;
  bool operator==(const PageRange&) const = default;
};

inline constexpr std::uint64_t kPagePresent = 1ULL << 63;
inline constexpr std::uint64_t kPageExclusive = 1ULL << 56;

// Pure: the runs of pages of a mapping starting at `start` whose pagemap `entries` say present
// and exclusively mapped, appended to `out` until `budget` bytes are taken (what is left of it is
// returned).
std::size_t exclusive_runs(std::uintptr_t start, std::span<const std::uint64_t> entries, std::size_t page_size,
                           std::size_t budget, std::vector<PageRange>& out);

// The pages of this process's private writable mappings that it holds alone, at most `budget`
// bytes of them (in address order); empty when /proc/self/pagemap cannot be read. Bounded work:
// mappings over 1 GiB (reservations: a sanitizer's shadow, an arena mapped ahead) are passed
// over, at most 2 GiB of address space is looked at, pagemap is read 32 KiB at a time.
std::vector<PageRange> pages_written_here(std::size_t budget) noexcept;

// The same of another process (`pid`, stopped or waiting: its pages do not change meanwhile),
// read through /proc/PID (so where this process may read its memory: its parent, same user).
std::vector<PageRange> pages_written_by(pid_t pid, std::size_t budget) noexcept;

// Gives this process its own copy of each page of `ranges` (their contents unchanged); asks
// `interrupted()` before each `slice_bytes` of copies (however the ranges fall) and stops early
// when it says so. Returns the bytes done.
std::size_t take_copies(const std::vector<PageRange>& ranges, std::size_t slice_bytes,
                        const std::function<bool()>& interrupted);

}  // namespace engine::zygote
