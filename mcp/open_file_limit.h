// The server's own open-file limit (RLIMIT_NOFILE). Every HTTP connection, every run in flight
// (its pipes, script, cgroup, pidfd) and every session holds descriptors of the server's. A
// server out of them refuses calls (each refusal says to raise ulimit -n), and worse, the HTTP
// library stops accepting for good after one failed accept(). So the soft limit is raised to
// the hard one at start, and --max-connections must fit in what is left after the runs.
#pragma once

#include <sys/resource.h>

#include <optional>
#include <string>

namespace mcp {

// Raises the soft open-file limit to the hard one (at most 1 << 20: what is never needed is
// not taken). Returns the soft limit in force afterwards.
rlim_t raise_open_file_limit();

// Descriptors kept for everything but connections: the server's own, and those of each run
// that may be in flight.
rlim_t descriptors_besides_connections(unsigned max_concurrent_runs);

// Why `max_connections` does not fit under `limit` with `max_concurrent_runs` runs, naming the
// flag and the limit to change; nullopt when it fits.
std::optional<std::string> connections_fit(unsigned max_connections, unsigned max_concurrent_runs, rlim_t limit);

// The connections the server allows: `max_connections` when it fits; the default lowered to what
// fits (at least 16), with `warning` saying so; else `error` (a --max-connections given that
// does not fit, or no room even for 16).
struct ConnectionBound {
  unsigned max_connections = 0;
  std::string warning;
  std::string error;
};
ConnectionBound connection_bound(unsigned max_connections, bool given, unsigned max_concurrent_runs, rlim_t limit);

}  // namespace mcp
