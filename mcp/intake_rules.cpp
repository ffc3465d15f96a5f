// The pure rules of mcp/intake.h that need nothing of the engine: when calls may start, a
// batch's next call, how many calls a message starts (also built into the fuzz targets).
#include <algorithm>

#include "mcp/intake.h"

namespace mcp {

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
