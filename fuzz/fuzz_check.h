// What every fuzz target shares: a check that reports the broken property and aborts, so that
// libFuzzer records the input as a crash, and a way to cut the input into fuzzer-chosen chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(condition)                                                        \
  do {                                                                               \
    if (!(condition)) {                                                              \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #condition, __FILE__, \
                   __LINE__);                                                        \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

namespace fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `text` into chunks whose sizes come from `sizes` (cycled; 0 counts as 1), the way reads
// from a pipe or a socket may cut a stream anywhere.
inline std::vector<std::string_view> chunks(std::string_view text, std::string_view sizes) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (!text.empty()) {
    std::size_t n = 1;
    if (!sizes.empty()) n = static_cast<unsigned char>(sizes[i++ % sizes.size()]) % 64 + 1;
    n = std::min(n, text.size());
    out.push_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace fuzz
