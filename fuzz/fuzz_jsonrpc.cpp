// JSON-RPC parsing and classification (mcp/jsonrpc.*) and the id sniffer (mcp/id_sniffer.*).
// Input: one line as a client sends it.
// Properties: parse never throws and refuses nesting deeper than kMaxNesting; what it accepts
// serialises to one line, exactly as nlohmann's serializer writes it, that parses back to the
// same value; classify never throws and says why
// a message is invalid; for an object whose "id" key appears once, the sniffer recovers the
// same id the parser sees.
#include <string>

#include "fuzz/fuzz_check.h"
#include "mcp/id_sniffer.h"
#include "mcp/jsonrpc.h"

namespace rpc = mcp::jsonrpc;

namespace {

int depth_of(const nlohmann::json& value) {
  if (!value.is_structured()) return 0;
  int deepest = 0;
  for (const auto& child : value) deepest = std::max(deepest, depth_of(child));
  return deepest + 1;
}

std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line = fuzz::as_text(data, size);
  const auto parsed = rpc::parse(line);

  mcp::IdSniffer sniffer;
  sniffer.feed(line);
  const auto sniffed = sniffer.id();
  if (sniffed) FUZZ_CHECK(rpc::is_valid_id(*sniffed));

  if (!parsed) return 0;
  FUZZ_CHECK(depth_of(*parsed) <= rpc::kMaxNesting);

  const std::string text = rpc::serialize(*parsed);
  // The fast writer gives exactly what nlohmann's serializer gives.
  FUZZ_CHECK(text == parsed->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  FUZZ_CHECK(text.find('\n') == std::string::npos);
  const auto again = rpc::parse(text);
  FUZZ_CHECK(again.has_value());
  // Invalid UTF-8 in a string is replaced when serialised, so compare only what stayed the same.
  if (text == parsed->dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore)) {
    FUZZ_CHECK(*again == *parsed);
  }

  const auto classified = rpc::classify(*parsed);
  if (classified.kind == rpc::Kind::invalid) FUZZ_CHECK(!classified.problem.empty());
  if (classified.kind == rpc::Kind::request) FUZZ_CHECK(classified.id.has_value());
  if (classified.id) FUZZ_CHECK(rpc::is_valid_id(*classified.id));
  (void)rpc::serialize(rpc::error_response(classified.id, rpc::kInvalidRequest, classified.problem));

  if (parsed->is_object() && count_of(line, "\"id\"") == 1 && line.find('\\') == std::string_view::npos) {
    const auto it = parsed->find("id");
    const bool valid = it != parsed->end() && rpc::is_valid_id(*it);
    // The sniffer gives up on an id over 512 characters.
    FUZZ_CHECK(sniffed.has_value() == valid || (valid && line.size() > 512));
    if (valid && sniffed) FUZZ_CHECK(*sniffed == *it);
  }
  return 0;
}
