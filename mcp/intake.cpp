#include "mcp/intake.h"

#include <algorithm>

#include "engine/execution/result_channel.h"

namespace mcp {

namespace {

constexpr std::size_t kMinIntakeBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxCallsInFlight = 256;
constexpr std::size_t kEnvelopeBytes = std::size_t{128} << 10;  // notes, figures, metadata

std::size_t base64_size(std::size_t bytes) { return (bytes + 2) / 3 * 4; }

}  // namespace

std::size_t reply_bound_bytes(const engine::EngineConfig& config) {
  const std::size_t out = config.max_output_bytes;
  return 4 * out                                                  // stdout, stderr: text + structured
         + 3 * out                                                // the value: repr twice, JSON once
         + config.max_images * base64_size(engine::kMaxImageBytes)
         + base64_size(static_cast<std::size_t>(config.max_output_file_bytes))
         + kEnvelopeBytes;
}

IntakeLimits intake_limits(const engine::EngineConfig& config) {
  const std::size_t runs = engine::max_concurrent_runs(config);
  IntakeLimits limits;
  limits.max_bytes = std::max(kMinIntakeBytes, (runs + 1) * reply_bound_bytes(config));
  limits.max_calls = kMaxCallsInFlight;
  return limits;
}

}  // namespace mcp
