// What memory costs on this machine, per 4 KiB page: the faults a forked run pays for every page
// it touches. Measured in this process and forked children; no sandbox needed.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace floor_bench {

// {"page_size", "pages", "repeat", "fresh_page_us", "cow_fault_us", "first_read_after_fork_us",
//  "read_again_us", "fork_us"}: medians over `repeat` rounds, each over `pages` pages (huge
// pages off for the region). Throws std::runtime_error when mmap, pipe or fork fail.
nlohmann::json measure_page_touch(std::size_t pages, int repeat);

}  // namespace floor_bench
