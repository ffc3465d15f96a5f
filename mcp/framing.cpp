#include "mcp/framing.h"

#include <cstring>
#include <utility>

namespace mcp {

LineFramer::LineFramer(LineFn on_line, OversizeFn on_oversize, std::size_t max_line_bytes)
    : on_line_(std::move(on_line)), on_oversize_(std::move(on_oversize)), max_(max_line_bytes) {}

void LineFramer::emit(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > max_) {
    IdSniffer sniffer;
    sniffer.feed(line);
    on_oversize_(OversizeLine{line.size(), max_, sniffer.id()});
    return;
  }
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  on_line_(line);
}

void LineFramer::start_discarding() {
  // From here on only a byte count and the id sniffer's small state survive.
  discarding_ = true;
  sniffer_.reset();
  sniffer_.feed(partial_);
  discarded_ = partial_.size();
  discarded_cr_ = !partial_.empty() && partial_.back() == '\r';
  std::string().swap(partial_);  // give the memory back, not just the size
}

void LineFramer::append_partial(std::string_view bytes) {
  if (discarding_) {
    sniffer_.feed(bytes);
    discarded_ += bytes.size();
    if (!bytes.empty()) discarded_cr_ = bytes.back() == '\r';
    return;
  }
  // One byte of slack so that a line of exactly max_ bytes may still end in "\r".
  if (partial_.size() + bytes.size() > max_ + 1) {
    start_discarding();
    sniffer_.feed(bytes);
    discarded_ += bytes.size();
    if (!bytes.empty()) discarded_cr_ = bytes.back() == '\r';
    return;
  }
  partial_.append(bytes);
}

void LineFramer::end_discarding() {
  // The line's length without its trailing "\r", as emit() counts a line that came whole.
  OversizeLine over{discarded_ - (discarded_cr_ ? 1 : 0), max_, sniffer_.id()};
  discarding_ = false;
  discarded_ = 0;
  discarded_cr_ = false;
  on_oversize_(over);
}

std::size_t LineFramer::feed(std::string_view bytes) {
  const std::size_t total = bytes.size();
  while (!bytes.empty() && !paused_) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    if (nl == nullptr) {
      append_partial(bytes);
      return total;
    }
    const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data());
    const std::string_view head = bytes.substr(0, len);
    bytes.remove_prefix(len + 1);
    if (!discarding_ && partial_.empty()) {
      emit(head);  // the common case: a whole line inside one read, no copy
      continue;
    }
    append_partial(head);
    if (discarding_) {
      end_discarding();
    } else {
      std::string line = std::move(partial_);
      partial_.clear();
      emit(line);
    }
  }
  return total - bytes.size();
}

void LineFramer::finish() {
  if (discarding_) {
    end_discarding();
    return;
  }
  if (!partial_.empty()) {
    std::string line = std::move(partial_);
    partial_.clear();
    emit(line);
  }
}

}  // namespace mcp
