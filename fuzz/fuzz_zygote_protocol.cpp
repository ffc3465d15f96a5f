// The zygote control protocol decoder (engine/zygote/protocol.*): what the server reads from a
// zygote's socket, and the zygote from the server's.
// Input: one datagram.
// Properties: decode never reads out of bounds nor throws; a refusal says why; what it accepts
// encodes back to exactly the same bytes.
#include <vector>

#include "engine/zygote/protocol.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  engine::zygote::Message message;
  std::string error;
  // A copy of exactly `size` bytes, so that ASan sees any read past the datagram's end.
  const std::vector<std::uint8_t> bytes(data, data + size);
  if (!engine::zygote::decode(bytes, message, error)) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(engine::zygote::encode(message) == bytes);
  return 0;
}
