#include "mcp/open_file_limit.h"

#include <algorithm>

namespace mcp {

rlim_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t wanted = std::min<rlim_t>(limit.rlim_max, rlim_t{1} << 20);
  if (limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = wanted;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return wanted;
  }
  return limit.rlim_cur;
}

rlim_t descriptors_besides_connections(unsigned max_concurrent_runs) {
  // 64 for the server itself (logs, zygote links, the network agent, its listener, sessions'
  // links); 16 per run in flight (three pipes, script and files memfds, pidfd, cgroup files,
  // the zygote's hand-off, with room).
  return 64 + rlim_t{16} * max_concurrent_runs;
}

std::optional<std::string> connections_fit(unsigned max_connections, unsigned max_concurrent_runs, rlim_t limit) {
  const rlim_t others = descriptors_besides_connections(max_concurrent_runs);
  if (limit == RLIM_INFINITY || rlim_t{max_connections} + others <= limit) return std::nullopt;
  std::string why = "--max-connections " + std::to_string(max_connections) +
                    " does not fit in the server's open-file limit (" + std::to_string(limit) +
                    ", its hard limit: ulimit -Hn) beside " + std::to_string(max_concurrent_runs) +
                    " runs in flight, which keep " + std::to_string(others) +
                    " descriptors: raise the limit to at least " + std::to_string(rlim_t{max_connections} + others);
  if (limit > others) why += " or give --max-connections " + std::to_string(limit - others) + " or less";
  return why;
}

ConnectionBound connection_bound(unsigned max_connections, bool given, unsigned max_concurrent_runs, rlim_t limit) {
  ConnectionBound out;
  auto why = connections_fit(max_connections, max_concurrent_runs, limit);
  if (!why) {
    out.max_connections = max_connections;
    return out;
  }
  const rlim_t others = descriptors_besides_connections(max_concurrent_runs);
  constexpr unsigned kFewest = 16;
  if (given || limit < others + kFewest) {
    out.error = std::move(*why);
    return out;
  }
  out.max_connections = static_cast<unsigned>(limit - others);
  out.warning = "the default --max-connections " + std::to_string(max_connections) + " lowered to " +
                std::to_string(out.max_connections) + " to fit in the server's open-file limit (" +
                std::to_string(limit) + ", ulimit -Hn) beside " + std::to_string(max_concurrent_runs) + " runs in flight";
  return out;
}

}  // namespace mcp
