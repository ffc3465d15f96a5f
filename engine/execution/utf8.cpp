#include "engine/execution/utf8.h"

#include <cstdint>
#include <cstring>

namespace engine {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char b0 = at(0);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if ((at(k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

namespace {

// True when the eight bytes at p are all ASCII.
bool ascii_word(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, sizeof x);
  return (x & 0x8080808080808080ULL) == 0;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t run = 0;  // start of the bytes not copied yet
  std::size_t i = 0;
  while (i < bytes.size()) {
    while (i + 8 <= bytes.size() && ascii_word(bytes.data() + i)) i += 8;
    if (i == bytes.size()) break;
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(bytes, i);
    if (len != 0) {
      i += len;
      continue;
    }
    out.append(bytes.substr(run, i - run));
    out += "\xEF\xBF\xBD";  // U+FFFD
    run = ++i;
  }
  out.append(bytes.substr(run));
  return out;
}

}  // namespace engine
