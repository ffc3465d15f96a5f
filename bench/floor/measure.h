// What the floor program's measurements of the machine share (page_touch.cpp, wake_up.cpp).
#pragma once

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace floor_bench {

inline std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// "<measurement>: <what>: strerror(errno)".
[[noreturn]] inline void fail(const char* measurement, const std::string& what) {
  throw std::runtime_error(std::string(measurement) + ": " + what + ": " + std::strerror(errno));
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace floor_bench
