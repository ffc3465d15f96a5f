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

bool may_start_calls(const IntakeLoad& load, std::size_t calls, std::size_t share,
                     const IntakeLimits& limits) {
  if (calls == 0) return true;
  if (load.calls_in_flight == 0 && load.queued_bytes == 0) return true;
  if (load.calls_in_flight + calls > limits.max_calls) return false;
  const std::size_t used = load.queued_bytes + load.reserved_bytes;
  if (used > limits.max_bytes) return false;
  const std::size_t room = limits.max_bytes - used;
  return share <= room && calls <= room / std::max<std::size_t>(share, 1);
}

BatchCall next_batch_call(std::size_t held_bytes, std::size_t running, std::size_t reply_bound,
                          std::size_t max_bytes) {
  if (max_bytes == 0 || (held_bytes == 0 && running == 0)) return BatchCall::start;
  const std::size_t may_reply = (running + 1) * reply_bound;
  if (held_bytes <= max_bytes && may_reply <= max_bytes - held_bytes) return BatchCall::start;
  return running == 0 ? BatchCall::refuse : BatchCall::wait;
}

namespace {

bool is_call_request(const nlohmann::json& message) {
  if (!message.is_object() || !message.contains("id")) return false;
  const auto method = message.find("method");
  return method != message.end() && method->is_string() &&
         method->get_ref<const std::string&>() == "tools/call";
}

}  // namespace

std::size_t calls_started(const nlohmann::json& message) {
  if (!message.is_array()) return is_call_request(message) ? 1 : 0;
  std::size_t calls = 0;
  for (const auto& element : message) calls += is_call_request(element) ? 1 : 0;
  return calls;
}

}  // namespace mcp
