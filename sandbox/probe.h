// What isolation this host can really give, probed (bwrap present and working, user namespaces,
// seccomp, cgroups). Blocking (runs bwrap once): call it off the server's event loop.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sandbox/policy.h"

namespace sandbox {

struct ProbeResult {
  std::string bwrap_path;         // "" = not found
  std::string bwrap_version;
  bool userns_works = false;      // an unprivileged user namespace could be created
  bool seccomp_available = false;
  std::string cgroup_mode;        // e.g. "v2 delegated: <path>", "v1 memory+pids", "none"
  std::string memory_limit_mechanism;   // e.g. "cgroup v1 memory.limit_in_bytes", "RLIMIT_DATA"
  std::string process_limit_mechanism;  // e.g. "cgroup pids.max", "RLIMIT_NPROC"
  std::string problem;            // "" when the native backend can run; else what is wrong
  std::string fix;                // the exact fix (package to install, sysctl, AppArmor profile)
  std::vector<std::pair<std::string, std::string>> details;  // extra "key: value" lines

  bool native_ready() const { return problem.empty(); }
};

ProbeResult probe_host(const Policy& policy);

}  // namespace sandbox
