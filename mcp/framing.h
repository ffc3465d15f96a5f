// Newline-delimited JSON-RPC framing (MCP stdio transport): splits a byte stream into lines,
// tolerates a trailing '\r', and discards over-long lines without ever holding them whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/id_sniffer.h"

namespace mcp {

inline constexpr std::size_t kMaxLineBytes = std::size_t{16} << 20;  // 16 MiB

struct OversizeLine {
  std::uint64_t bytes = 0;                // length of the discarded line
  std::uint64_t limit = kMaxLineBytes;    // the cap it exceeded
  std::optional<nlohmann::json> id;       // its top-level "id", when one could be recovered
};

class LineFramer {
 public:
  using LineFn = std::function<void(std::string_view line)>;
  using OversizeFn = std::function<void(const OversizeLine&)>;

  LineFramer(LineFn on_line, OversizeFn on_oversize, std::size_t max_line_bytes = kMaxLineBytes);

  // Delivers every complete line in `bytes` (without "\n" or a trailing "\r"); blank lines are
  // skipped. Callbacks run synchronously, in order. Returns how many bytes were taken: all of
  // them, unless a callback called pause(); then the bytes after that line's "\n" are left for a
  // later feed (after resume()).
  std::size_t feed(std::string_view bytes);
  // End of input: a final line without "\n" is still delivered.
  void finish();

  // From a callback: stop after the line being delivered (one message at a time).
  void pause() { paused_ = true; }
  void resume() { paused_ = false; }
  bool paused() const { return paused_; }

  // Bytes held for the current incomplete line (bounded by max_line_bytes + 1).
  std::size_t buffered_bytes() const { return partial_.size(); }

 private:
  void emit(std::string_view line);
  void start_discarding();
  void end_discarding();
  void append_partial(std::string_view bytes);

  LineFn on_line_;
  OversizeFn on_oversize_;
  std::size_t max_;
  std::string partial_;
  bool discarding_ = false;
  bool paused_ = false;
  std::uint64_t discarded_ = 0;
  bool discarded_cr_ = false;  // the last byte discarded so far was '\r'
  IdSniffer sniffer_;
};

}  // namespace mcp
