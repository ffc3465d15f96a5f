// LineFramer (mcp/framing.*): the bytes of a client, cut into lines under a size cap.
// Input: byte 0 = the cap (1..64, low 6 bits) and how often the reader pauses (high 2 bits: never,
// or after every 1st, 2nd or 3rd message, then resumes and feeds the rest), bytes 1..8 = read
// sizes, the rest = the stream.
// Properties: whatever the read boundaries and pauses, the lines and the oversize reports are
// those of a plain reference split; a feed takes everything unless the reader paused, and then
// exactly the bytes up to the paused message's newline; no delivered line holds '\n' or exceeds
// the cap; the buffer stays within the cap (+1 byte of slack for a final '\r'); an oversize
// report's id is what the sniffer recovers from the whole line.
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "mcp/framing.h"

namespace {

struct Event {
  bool oversize = false;
  std::string line;       // delivered line
  std::uint64_t bytes = 0;  // oversize: the discarded length
  std::string id;         // oversize: the sniffed id, dumped ("" = none)
  bool operator==(const Event&) const = default;
};

std::vector<Event> reference(std::string_view stream, std::size_t max) {
  std::vector<Event> out;
  auto take = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max) {
      mcp::IdSniffer sniffer;
      sniffer.feed(line);
      const auto id = sniffer.id();
      out.push_back({true, "", line.size(), id ? id->dump() : ""});
      return;
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    out.push_back({false, std::string(line), 0, ""});
  };
  for (;;) {
    const auto nl = stream.find('\n');
    if (nl == std::string_view::npos) break;
    take(stream.substr(0, nl));
    stream.remove_prefix(nl + 1);
  }
  if (!stream.empty()) take(stream);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 9) return 0;
  const std::size_t max = data[0] % 64 + 1;
  const unsigned pause_every = data[0] >> 6;  // 0: never
  const std::string_view sizes = fuzz::as_text(data + 1, 8);
  const std::string_view stream = fuzz::as_text(data + 9, size - 9);

  std::vector<Event> events;
  mcp::LineFramer* self = nullptr;
  auto maybe_pause = [&] {
    if (pause_every != 0 && events.size() % pause_every == 0) self->pause();
  };
  mcp::LineFramer framer(
      [&](std::string_view line) {
        FUZZ_CHECK(line.find('\n') == std::string_view::npos);
        FUZZ_CHECK(line.size() <= max);
        events.push_back({false, std::string(line), 0, ""});
        maybe_pause();
      },
      [&](const mcp::OversizeLine& over) {
        FUZZ_CHECK(over.bytes > max);
        FUZZ_CHECK(over.limit == max);
        events.push_back({true, "", over.bytes, over.id ? over.id->dump() : ""});
        maybe_pause();
      },
      max);
  self = &framer;
  for (std::string_view chunk : fuzz::chunks(stream, sizes)) {
    while (true) {
      const std::size_t taken = framer.feed(chunk);
      FUZZ_CHECK(taken <= chunk.size());
      FUZZ_CHECK(framer.buffered_bytes() <= max + 1);
      if (!framer.paused()) {
        FUZZ_CHECK(taken == chunk.size());
        break;
      }
      FUZZ_CHECK(taken > 0 && chunk[taken - 1] == '\n');  // stopped right after a message
      chunk.remove_prefix(taken);
      framer.resume();
      if (chunk.empty()) break;
    }
  }
  framer.finish();
  FUZZ_CHECK(framer.buffered_bytes() == 0);
  FUZZ_CHECK(events == reference(stream, max));
  return 0;
}
