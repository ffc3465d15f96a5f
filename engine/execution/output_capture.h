// One output stream of a run, kept within a byte limit: everything when it fits, else the head
// and the tail (the end of a traceback matters most) with a marker saying how much was dropped.
// The limit bounds the stream as it is sent, JSON-escaped (a control byte costs six), so that a
// reply stays within a small multiple of the limit whatever the script prints. Memory is bounded
// by about twice the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/execution/json_string.h"  // json_string_size
#include "engine/execution/utf8.h"         // sanitize_utf8
#include "engine/run.h"

namespace engine {

class OutputCapture {
 public:
  explicit OutputCapture(std::size_t limit_bytes);

  void append(std::string_view chunk);
  std::uint64_t total_bytes() const { return total_; }

  // The kept text: valid UTF-8 (invalid bytes become U+FFFD), never longer than the limit once
  // JSON-escaped, marker included; dropped_bytes counts the bytes of output left out between
  // head and tail. Once, at the end: the kept bytes move out when they need no change.
  CapturedStream finish();

  // "\n[... N bytes dropped ...]\n"
  static std::string marker(std::uint64_t dropped_bytes);
  // The kept form of a whole text at once.
  static CapturedStream capture(std::string_view text, std::size_t limit_bytes) {
    OutputCapture c(limit_bytes);
    c.append(text);
    return c.finish();
  }

 private:
  std::string tail_in_order() const;

  std::size_t limit_;
  std::string head_;         // the first `limit_` bytes
  std::string tail_;         // ring buffer of the last bytes beyond the head, at most `limit_`
  std::size_t tail_pos_ = 0; // where the next byte goes once the ring is full
  std::uint64_t total_ = 0;
};

}  // namespace engine
