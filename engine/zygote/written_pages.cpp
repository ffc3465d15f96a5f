#include "engine/zygote/written_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "sandbox/read_file.h"
#include "sandbox/unique_fd.h"

namespace engine::zygote {

std::size_t exclusive_runs(std::uintptr_t start, std::span<const std::uint64_t> entries, std::size_t page_size,
                           std::size_t budget, std::vector<PageRange>& out) {
  constexpr std::uint64_t kWanted = kPagePresent | kPageExclusive;
  std::size_t i = 0;
  while (i < entries.size() && budget >= page_size) {
    if ((entries[i] & kWanted) != kWanted) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < entries.size() && (entries[end] & kWanted) == kWanted && (end - i + 1) * page_size <= budget) ++end;
    const std::size_t bytes = (end - i) * page_size;
    const std::uintptr_t at = start + i * page_size;
    if (!out.empty() && out.back().start + out.back().bytes == at) {
      out.back().bytes += bytes;
    } else {
      out.push_back({at, bytes});
    }
    budget -= bytes;
    i = end;
  }
  return budget;
}

namespace {

constexpr std::size_t kChunkEntries = 4096;              // pagemap entries per read (32 KiB)
constexpr std::uintptr_t kMaxMappingBytes = 1ULL << 30;  // larger: a reservation, passed over
constexpr std::size_t kMaxScannedPages = std::size_t{1} << 19;  // 2 GiB of address space per call

}  // namespace

std::vector<PageRange> pages_written_here(std::size_t budget) noexcept { return pages_written_by(0, budget); }

std::vector<PageRange> pages_written_by(pid_t pid, std::size_t budget) noexcept {
  std::vector<PageRange> out;
  try {
    const long page = ::sysconf(_SC_PAGESIZE);
    if (page <= 0) return out;
    const auto page_size = static_cast<std::size_t>(page);
    const std::string proc = pid > 0 ? "/proc/" + std::to_string(pid) : std::string("/proc/self");
    sandbox::UniqueFd pagemap(::open((proc + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC));
    if (!pagemap) return out;
    // Whole (its lines may be longer than any fixed buffer: a path is up to 4 KiB).
    const std::string maps = sandbox::read_file(proc + "/maps").value_or("");
    std::vector<std::uint64_t> entries(kChunkEntries);
    std::size_t scanned = 0;
    std::size_t at_line = 0;
    while (at_line < maps.size() && budget >= page_size && scanned < kMaxScannedPages) {
      std::size_t end = maps.find('\n', at_line);
      if (end == std::string::npos) end = maps.size();
      const std::string line = maps.substr(at_line, end - at_line);
      at_line = end + 1;
      unsigned long lo = 0, hi = 0;
      char perms[5] = {};
      if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3 || hi <= lo) continue;
      if (std::strcmp(perms, "rw-p") != 0) continue;  // private and writable: what a write copies
      if (hi - lo > kMaxMappingBytes) continue;  // a sanitizer's shadow, a reserved arena: not the heap
      for (std::uintptr_t at = lo; at < hi && budget >= page_size && scanned < kMaxScannedPages;) {
        const std::size_t n = std::min({kChunkEntries, (hi - at) / page_size, kMaxScannedPages - scanned});
        const auto want = static_cast<ssize_t>(n * sizeof(std::uint64_t));
        if (::pread(pagemap.get(), entries.data(), static_cast<std::size_t>(want),
                    static_cast<off_t>(at / page_size * sizeof(std::uint64_t))) != want) {
          break;
        }
        budget = exclusive_runs(at, std::span<const std::uint64_t>(entries.data(), n), page_size, budget, out);
        at += n * page_size;
        scanned += n;
      }
    }
  } catch (...) {
    // Out of memory: what was found so far (the spare copies less; nothing else depends on it).
  }
  return out;
}

std::size_t take_copies(const std::vector<PageRange>& ranges, std::size_t slice_bytes,
                        const std::function<bool()>& interrupted) {
#ifdef MADV_POPULATE_WRITE
  // A look every `slice_bytes` of copies, wherever the ranges begin and end: the scan finds
  // hundreds of short runs, and a look per run would cost a syscall for every few pages.
  std::size_t done = 0;
  std::size_t since_look = slice_bytes;  // look before the first copy
  for (const auto& range : ranges) {
    for (std::size_t offset = 0; offset < range.bytes;) {
      if (since_look >= slice_bytes) {
        if (interrupted && interrupted()) return done;
        since_look = 0;
      }
      const std::size_t n = std::min(slice_bytes - since_look, range.bytes - offset);
      if (::madvise(reinterpret_cast<void*>(range.start + offset), n, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL) return done;  // a kernel before 5.14: nothing to gain here
        break;                             // this range changed meanwhile: the next one
      }
      offset += n;
      since_look += n;
      done += n;
    }
  }
  return done;
#else
  (void)ranges;
  (void)slice_bytes;
  (void)interrupted;
  return 0;
#endif
}

}  // namespace engine::zygote
