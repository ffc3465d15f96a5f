#include "engine/zygote/written_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

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

std::vector<PageRange> pages_written_here(std::size_t budget) {
  std::vector<PageRange> out;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return out;
  const auto page_size = static_cast<std::size_t>(page);
  sandbox::UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap) return out;
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return out;
  std::vector<std::uint64_t> entries;
  char line[4096];
  while (budget >= page_size && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || hi <= lo) continue;
    if (std::strcmp(perms, "rw-p") != 0) continue;  // private and writable: what a write copies
    entries.resize((hi - lo) / page_size);
    const auto want = static_cast<ssize_t>(entries.size() * sizeof(std::uint64_t));
    const ssize_t got = ::pread(pagemap.get(), entries.data(), static_cast<std::size_t>(want),
                                static_cast<off_t>(lo / page_size * sizeof(std::uint64_t)));
    if (got != want) continue;
    budget = exclusive_runs(lo, entries, page_size, budget, out);
  }
  std::fclose(maps);
  return out;
}

std::size_t take_copies(const std::vector<PageRange>& ranges, std::size_t slice_bytes,
                        const std::function<bool()>& interrupted) {
#ifdef MADV_POPULATE_WRITE
  std::size_t done = 0;
  for (const auto& range : ranges) {
    for (std::size_t offset = 0; offset < range.bytes; offset += slice_bytes) {
      if (interrupted && interrupted()) return done;
      const std::size_t n = std::min(slice_bytes, range.bytes - offset);
      if (::madvise(reinterpret_cast<void*>(range.start + offset), n, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL) return done;  // a kernel before 5.14: nothing to gain here
        break;                             // this range changed meanwhile: the next one
      }
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
