#include "engine/execution/json_string.h"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/execution/utf8.h"

namespace engine {
namespace {

// What a byte becomes inside a JSON string: 0 = itself, 'u' = \u00xx, else the letter after '\'.
constexpr std::array<char, 256> make_escapes() {
  std::array<char, 256> table{};
  for (int b = 0; b < 0x20; ++b) table[static_cast<std::size_t>(b)] = 'u';
  table['\b'] = 'b';
  table['\t'] = 't';
  table['\n'] = 'n';
  table['\f'] = 'f';
  table['\r'] = 'r';
  table['"'] = '"';
  table['\\'] = '\\';
  return table;
}
constexpr std::array<char, 256> kEscapes = make_escapes();

// Output is mostly plain ASCII: eight bytes are checked at once (no byte >= 0x80, below 0x20,
// '"' or '\') before falling back to one at a time.
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;

bool plain_word(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, sizeof x);
  const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t special = (x & kHighs) | ((x - kOnes * 0x20) & ~x & kHighs) |
                                has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\'));
  return special == 0;
}

// The first index >= i whose byte is not plain (or where fewer than eight bytes are left).
// Sixteen bytes at a time where SSE2 is (every x86-64): outputs of megabytes are scanned twice
// per reply (its size, then the writing).
std::size_t skip_plain(std::string_view s, std::size_t i) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (i + 16 <= s.size()) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    // A signed comparison: bytes >= 0x80 are negative, so "below 0x20" catches them too.
    const __m128i special = _mm_or_si128(_mm_cmplt_epi8(x, space),
                                         _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)));
    const int mask = _mm_movemask_epi8(special);
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
#endif
  while (i + 8 <= s.size() && plain_word(s.data() + i)) i += 8;
  return i;
}

}  // namespace

std::size_t json_string_size(std::string_view text) {
  std::size_t size = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t plain_end = skip_plain(text, i);
    size += plain_end - i;
    i = plain_end;
    if (i == text.size()) break;
    const char escape = kEscapes[static_cast<unsigned char>(text[i])];
    size += escape == 0 ? 1 : escape == 'u' ? 6 : 2;
    ++i;
  }
  return size;
}

bool append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::size_t start_size = out.size();
  out += '"';
  std::size_t run = 0;  // start of the bytes not copied yet
  std::size_t i = 0;
  while (i < text.size()) {
    i = skip_plain(text, i);
    if (i == text.size()) break;
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x80) {
      const std::size_t length = utf8_sequence_length(text, i);
      if (length == 0) {
        out.resize(start_size);
        return false;
      }
      i += length;
      continue;
    }
    const char escape = kEscapes[b];
    if (escape == 0) {
      ++i;
      continue;
    }
    out.append(text.substr(run, i - run));
    out += '\\';
    if (escape == 'u') {
      out += "u00";
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    } else {
      out += escape;
    }
    run = ++i;
  }
  out.append(text.substr(run));
  out += '"';
  return true;
}

bool json_nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escape = false;
  for (const char c : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace engine
