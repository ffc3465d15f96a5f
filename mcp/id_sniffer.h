// Recovers the top-level "id" of a JSON-RPC message from a stream of bytes without keeping the
// message: used for lines over the size cap, so the error can still name the request it answers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mcp {

class IdSniffer {
 public:
  void feed(std::string_view bytes);
  // The id when the stream was an object whose top-level "id" is a valid one (jsonrpc::is_valid_id).
  std::optional<nlohmann::json> id() const;
  void reset() { *this = IdSniffer{}; }

 private:
  enum class Phase { start, expect_key, key, after_key, value, done, failed };
  void feed_char(char c);
  void capture(char c);

  Phase phase_ = Phase::start;
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool capturing_ = false;  // inside the value of a top-level "id"
  bool id_nested_ = false;  // that value was an object or array: not a valid id
  std::string key_;
  std::string id_text_;
};

}  // namespace mcp
