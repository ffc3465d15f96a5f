#include "mcp/http/output_budget.h"

#include <algorithm>

#include "mcp/intake.h"

namespace mcp::http {

namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

OutputLimits output_limits(const engine::EngineConfig& config) {
  OutputLimits limits;
  limits.client_bytes = intake_limits(config).max_bytes;
  limits.total_bytes = 4 * limits.client_bytes;
  limits.call_bytes = reply_bound_bytes(config);
  return limits;
}

std::optional<OutputRefusal> refuse_call(std::size_t client_unsent, std::size_t total_unsent,
                                         const OutputLimits& limits) {
  if (client_unsent >= limits.client_bytes) {
    return OutputRefusal{429, 1,
                         "Too Many Requests: " + mib(client_unsent) + " of this client's responses are not read yet "
                         "(at most " + mib(limits.client_bytes) + " per client); read them (or resume your event "
                         "streams), then send new calls"};
  }
  if (total_unsent >= limits.total_bytes) {
    return OutputRefusal{503, 1,
                         "Service Unavailable: " + mib(total_unsent) + " of responses wait for clients that do not "
                         "read them (at most " + mib(limits.total_bytes) + " for the whole server); retry later"};
  }
  return std::nullopt;
}

void OutputBudget::add(const std::string& client, std::size_t bytes) {
  if (bytes == 0) return;
  unsent_[client] += bytes;
  total_ += bytes;
}

void OutputBudget::remove(const std::string& client, std::size_t bytes) {
  const auto it = unsent_.find(client);
  if (it == unsent_.end()) return;
  const std::size_t n = std::min(bytes, it->second);
  it->second -= n;
  total_ -= n;
  if (it->second == 0) unsent_.erase(it);
}

std::function<void(std::ptrdiff_t)> OutputBudget::charger(std::shared_ptr<OutputBudget> budget, std::string client) {
  return [budget = std::move(budget), client = std::move(client)](std::ptrdiff_t bytes) {
    if (bytes > 0) {
      budget->add(client, static_cast<std::size_t>(bytes));
    } else {
      budget->remove(client, static_cast<std::size_t>(-bytes));
    }
  };
}

std::size_t OutputBudget::unsent(const std::string& client) const {
  const auto it = unsent_.find(client);
  return it == unsent_.end() ? 0 : it->second;
}

}  // namespace mcp::http
