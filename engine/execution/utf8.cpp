#include "engine/execution/utf8.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The first index >= i that starts no well-formed sequence, or bytes.size().
std::size_t first_invalid(std::string_view bytes, std::size_t i) {
  while (i < bytes.size()) {
#if defined(__SSE2__)
    // Sixteen at a time: a byte's high bit is its lane's bit in the mask.
    while (i + 16 <= bytes.size()) {
      const int high = _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes.data() + i)));
      if (high != 0) {
        i += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(high)));
        break;
      }
      i += 16;
    }
#endif
    while (i + 8 <= bytes.size() && ascii_word(bytes.data() + i)) i += 8;
    if (i == bytes.size()) break;
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(bytes, i);
    if (len == 0) return i;
    i += len;
  }
  return bytes.size();
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t run = 0;  // start of the bytes not copied yet
  for (std::size_t bad = first_invalid(bytes, 0); bad < bytes.size(); bad = first_invalid(bytes, run)) {
    out.append(bytes.substr(run, bad - run));
    out += "\xEF\xBF\xBD";  // U+FFFD
    run = bad + 1;
  }
  out.append(bytes.substr(run));
  return out;
}

bool valid_utf8(std::string_view bytes) { return first_invalid(bytes, 0) == bytes.size(); }

}  // namespace engine
