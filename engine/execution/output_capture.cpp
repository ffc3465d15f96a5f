#include "engine/execution/output_capture.h"

#include <algorithm>

namespace engine {
namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Largest n <= want such that s[0, n) does not end inside a multi-byte sequence.
std::size_t prefix_boundary(std::string_view s, std::size_t want) {
  std::size_t n = std::min(want, s.size());
  std::size_t back = 0;
  while (n > 0 && n < s.size() && is_continuation(s[n]) && back < 3) {
    --n;
    ++back;
  }
  return n;
}

// Smallest start >= s.size() - want such that s[start, end) does not begin inside a sequence.
std::size_t suffix_start(std::string_view s, std::size_t want) {
  std::size_t start = s.size() - std::min(want, s.size());
  std::size_t skipped = 0;
  while (start < s.size() && is_continuation(s[start]) && skipped < 3) {
    ++start;
    ++skipped;
  }
  return start;
}

// Prefer to cut at a line boundary when one is close to the cut.
std::size_t snap_prefix_to_line(std::string_view s, std::size_t n) {
  const std::size_t window = std::min<std::size_t>(256, n / 4);
  for (std::size_t k = 0; k < window; ++k) {
    if (s[n - 1 - k] == '\n') return n - k;
  }
  return n;
}

std::size_t snap_suffix_to_line(std::string_view s, std::size_t start) {
  const std::size_t window = std::min<std::size_t>(256, (s.size() - start) / 4);
  for (std::size_t k = 0; k < window; ++k) {
    if (s[start + k] == '\n') return start + k + 1;
  }
  return start;
}

}  // namespace

OutputCapture::OutputCapture(std::size_t limit_bytes) : limit_(limit_bytes) {
  head_.reserve(std::min<std::size_t>(limit_, 64 * 1024));
}

void OutputCapture::append(std::string_view chunk) {
  total_ += chunk.size();
  if (head_.size() < limit_) {
    const std::size_t n = std::min(limit_ - head_.size(), chunk.size());
    head_.append(chunk.substr(0, n));
    chunk.remove_prefix(n);
  }
  if (chunk.empty() || limit_ == 0) return;
  if (chunk.size() >= limit_) {  // the chunk alone fills the ring: keep its end
    tail_.assign(chunk.substr(chunk.size() - limit_));
    tail_pos_ = 0;
    return;
  }
  if (tail_.size() < limit_) {
    const std::size_t n = std::min(limit_ - tail_.size(), chunk.size());
    tail_.append(chunk.substr(0, n));
    chunk.remove_prefix(n);
  }
  while (!chunk.empty()) {  // ring full: overwrite the oldest bytes
    const std::size_t n = std::min(limit_ - tail_pos_, chunk.size());
    tail_.replace(tail_pos_, n, chunk.substr(0, n));
    tail_pos_ = (tail_pos_ + n) % limit_;
    chunk.remove_prefix(n);
  }
}

std::string OutputCapture::tail_in_order() const {
  if (tail_pos_ == 0) return tail_;
  std::string out;
  out.reserve(tail_.size());
  out.append(tail_, tail_pos_, std::string::npos);
  out.append(tail_, 0, tail_pos_);
  return out;
}

std::string OutputCapture::marker(std::uint64_t dropped_bytes) {
  return "\n[... " + std::to_string(dropped_bytes) + " bytes dropped ...]\n";
}

CapturedStream OutputCapture::finish() {
  const std::string tail = tail_in_order();
  const std::uint64_t gap = total_ - head_.size() - tail.size();  // bytes in neither buffer
  CapturedStream result;
  if (gap == 0) {
    // Mostly the whole stream is in the head, and valid: then it is the text, not a copy.
    const bool as_is = tail.empty() && valid_utf8(head_);
    std::string all = as_is ? std::move(head_) : tail.empty() ? sanitize_utf8(head_) : sanitize_utf8(head_ + tail);
    if (json_string_size(all) <= limit_) {
      result.text = std::move(all);
      return result;
    }
    if (as_is) head_ = std::move(all);  // cut below
  }
  // When nothing fell between the buffers, cut head and tail from the whole stream; otherwise
  // the head comes from head_ and the tail from the ring (which then holds `limit_` bytes).
  const std::string whole = gap == 0 ? head_ + tail : std::string();
  const std::string_view head_src = gap == 0 ? std::string_view(whole) : std::string_view(head_);
  const std::string_view tail_src = gap == 0 ? std::string_view(whole) : std::string_view(tail);

  std::size_t budget = limit_ > marker(total_).size() ? limit_ - marker(total_).size() : 0;
  for (;;) {
    // The tail gets the larger share: the end of a traceback matters most.
    const std::size_t head_want = std::min(budget * 2 / 5, head_src.size());
    std::size_t tail_want = std::min(budget - head_want, tail_src.size());
    std::size_t h = prefix_boundary(head_src, head_want);
    if (h > 0) h = snap_prefix_to_line(head_src, h);
    std::size_t t_start = suffix_start(tail_src, tail_want);
    if (gap == 0) t_start = std::max(t_start, h);  // head and tail must not overlap
    if (t_start < tail_src.size()) t_start = snap_suffix_to_line(tail_src, t_start);
    const std::size_t t = tail_src.size() - t_start;
    const std::uint64_t dropped = total_ - h - t;
    std::string text = sanitize_utf8(head_src.substr(0, h));
    text += marker(dropped);
    text += sanitize_utf8(tail_src.substr(t_start));
    const std::size_t size = json_string_size(text);
    if (size <= limit_ || budget == 0) {
      if (size > limit_) text = marker(dropped).substr(0, limit_);  // absurdly small limit
      result.text = std::move(text);
      result.dropped_bytes = dropped;
      return result;
    }
    // Escapes and replaced invalid bytes made it larger: shrink the budget by the excess.
    const std::size_t excess = size - limit_;
    budget = budget > excess ? budget - excess : 0;
  }
}

}  // namespace engine
