#include "mcp/id_sniffer.h"

#include "mcp/jsonrpc.h"

namespace mcp {

namespace {
// Only a short key ("id") and a short scalar value are ever worth keeping.
constexpr std::size_t kMaxKeyChars = 8;
constexpr std::size_t kMaxIdChars = 512;
}  // namespace

void IdSniffer::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (phase_ == Phase::done || phase_ == Phase::failed) return;
    feed_char(c);
  }
}

void IdSniffer::capture(char c) {
  if (!capturing_ || depth_ != 1) return;
  if (id_text_.size() >= kMaxIdChars) {
    id_nested_ = true;  // absurdly long id: give up on it
    return;
  }
  id_text_.push_back(c);
}

void IdSniffer::feed_char(char c) {
  if (in_string_) {
    if (phase_ == Phase::key) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        phase_ = Phase::after_key;
        return;
      }
      if (key_.size() <= kMaxKeyChars) key_.push_back(c);
      return;
    }
    capture(c);
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return;
  }
  switch (c) {
    case ' ': case '\t': case '\r': case '\n':
      return;
    case '"':
      in_string_ = true;
      if (depth_ == 1 && phase_ == Phase::expect_key) {
        phase_ = Phase::key;
        key_.clear();
      } else {
        capture(c);
      }
      return;
    case '{': case '[':
      if (phase_ == Phase::start) {
        if (c != '{') {
          phase_ = Phase::failed;
          return;
        }
        depth_ = 1;
        phase_ = Phase::expect_key;
        return;
      }
      if (capturing_ && depth_ == 1) id_nested_ = true;
      ++depth_;
      return;
    case '}': case ']':
      --depth_;
      if (depth_ <= 0) {
        capturing_ = false;
        phase_ = Phase::done;
      }
      return;
    case ':':
      if (depth_ == 1 && phase_ == Phase::after_key) {
        phase_ = Phase::value;
        capturing_ = key_ == "id";
        if (capturing_) {
          id_text_.clear();
          id_nested_ = false;
        }
        return;
      }
      capture(c);
      return;
    case ',':
      if (depth_ == 1) {
        phase_ = Phase::expect_key;
        capturing_ = false;
        return;
      }
      return;
    default:
      if (phase_ == Phase::start) {
        phase_ = Phase::failed;
        return;
      }
      capture(c);
      return;
  }
}

std::optional<nlohmann::json> IdSniffer::id() const {
  if (id_nested_ || id_text_.empty()) return std::nullopt;
  auto value = nlohmann::json::parse(id_text_, nullptr, false);
  if (jsonrpc::is_valid_id(value)) return value;
  return std::nullopt;
}

}  // namespace mcp
